"""`torch.compile(model)` (inductor, no CUDA graphs) from an imported factory: cgtool captures the compiled code
itself, untraced, and checks that the graph holds inductor's Triton kernels."""

import torch
from compiled_lib.factory import build


def setup(device):
    return {"model": build(device, mode=None)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 512, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
