"""Hazard: normalization constants made on the host in setup() and moved to the input's device in every step.

`norm` is created in setup() without a device, so it stays in pageable host memory; the step moves it with
`.to(images.device)`. Expected: CG402 (host-input) at that line: the host-to-device copy from pageable memory
fails in capture ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is
pinned"). Fix: make `norm` on the device in setup().
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 14 * 14, 10)).to(device).eval()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)  # stays on the CPU
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    return {"model": model, "norm": torch.stack([mean, std])}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.rand(4, 3, 16, 16, generator=g).to(device)}


@torch.no_grad()
def step(model, norm, images):
    mean, std = norm.to(images.device)  # expect: CG402
    return model((images - mean) / std).softmax(-1)
