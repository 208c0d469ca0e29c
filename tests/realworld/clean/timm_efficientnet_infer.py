"""Clean: timm efficientnet_b0 (create_model, pretrained=False) inference.

Models an EfficientNet classifier: MBConv blocks, squeeze-excitation, SiLU, BatchNorm in eval mode,
random weights, fixed 128x128 input.
Expected: no error findings; capture succeeds and replay matches eager.
"""

import timm
import torch

BATCH, RES = 2, 128


def setup(device):
    torch.manual_seed(0)
    model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=100).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.randn(BATCH, 3, RES, RES, generator=g).to(device)}


@torch.no_grad()
def step(model, images):
    return model(images)
