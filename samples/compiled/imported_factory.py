"""torch.compile(mode="reduce-overhead") called in an imported model factory (compiled_lib/factory.py), not in
this script. cgtool must find it while the script runs and report the compiled program: one CUDAGraph Trees
graph of inductor's kernels, not a capture of the uncompiled module."""

import torch
from compiled_lib.factory import build


def setup(device):
    return {"model": build(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 512, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
