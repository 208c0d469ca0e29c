"""A factory-compiled (mode="reduce-overhead") MLP fed batches whose size cycles through 12 values."""

import torch

from acme.factory import make

WIDTH = 256
SIZES = [4 * (k + 1) for k in range(12)]  # 4, 8, ..., 48


def setup(device):
    return {"model": make(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    batch = SIZES[i % len(SIZES)]
    return {"x": torch.randn(batch, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)  # expect: CG702
