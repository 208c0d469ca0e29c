"""A function compiled by `@torch.compile(mode="reduce-overhead")` in an imported module (compiled_lib/ops.py),
applied at import time."""

import torch
from compiled_lib.ops import gated_residual


def setup(device):
    return {"gate": torch.linspace(-2, 2, 1024, device=device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(256, 1024, generator=g).to(device)}


@torch.no_grad()
def step(gate, x):
    return gated_residual(x, gate)
