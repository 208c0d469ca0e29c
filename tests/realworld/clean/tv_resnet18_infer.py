"""Clean: torchvision resnet18(weights=None) image classification (inference, eval mode).

Models a batched classifier at fixed resolution (112x112), random weights, nothing downloaded.
Expected: no error findings; capture succeeds and replay matches eager.
"""

import torch
import torchvision

BATCH, RES = 4, 112


def setup(device):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.randn(BATCH, 3, RES, RES, generator=g).to(device)}


@torch.inference_mode()
def step(model, images):
    return model(images).softmax(-1)
