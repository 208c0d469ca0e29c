"""Clean: torchvision mobilenet_v3_small(weights=None) inference in channels_last memory format.

Models an edge-style classifier: depthwise convolutions, squeeze-excitation, hardswish; the model
and images are channels_last. Random weights, eval mode.
Expected: no error findings; capture succeeds and replay matches eager.
"""

import torch
import torchvision

BATCH, RES = 4, 128


def setup(device):
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v3_small(weights=None).to(device).eval()
    return {"model": model.to(memory_format=torch.channels_last)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    x = torch.randn(BATCH, 3, RES, RES, generator=g).to(device)
    return {"images": x.contiguous(memory_format=torch.channels_last)}


@torch.no_grad()
def step(model, images):
    return model(images)
