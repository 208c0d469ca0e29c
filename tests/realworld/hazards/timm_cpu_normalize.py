"""Hazard: a timm model on the GPU whose input-normalization constants were left on the CPU.

Models a common inference wrapper: the mean/std come from timm's data config
(`timm.data.resolve_data_config`) and are turned into tensors once in setup() without a device;
the step moves them to the images' device every iteration before running the timm resnet18.
Expected: CG402 (host-input) at the `.to(images.device)` line: a pageable host tensor made in
setup() is copied to the GPU inside the step ("Cannot copy between CPU and CUDA tensors during
CUDA graph capture unless the CPU tensor is pinned"). Fix: create mean/std on the device in setup.
"""

import timm
import torch
from timm.data import resolve_data_config

BATCH, RES = 4, 96


def setup(device):
    torch.manual_seed(0)
    model = timm.create_model("resnet18", pretrained=False, num_classes=100).to(device).eval()
    cfg = resolve_data_config({}, model=model)
    mean = torch.tensor(cfg["mean"]).view(1, 3, 1, 1)  # stays on the CPU
    std = torch.tensor(cfg["std"]).view(1, 3, 1, 1)
    return {"model": model, "norm": torch.stack([mean, std])}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.rand(BATCH, 3, RES, RES, generator=g).to(device)}


@torch.no_grad()
def step(model, norm, images):
    mean, std = norm.to(images.device)  # expect: CG402
    return model((images - mean) / std).softmax(-1)
