"""The batch size varies from call to call: dynamo recompiles with a dynamic batch and the trees record a graph
per size. The finding points at the call that passed the new shape (line of `model(x)`), with the compile call
(in compiled_lib/factory.py) as context."""

import torch
from compiled_lib.factory import build

SIZES = [8, 16, 24, 32, 40, 48, 56, 64, 72, 80]


def setup(device):
    return {"model": build(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(SIZES[i % len(SIZES)], 512, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)  # expect: CG702
