"""A factory-compiled MLP in the default compile mode (no CUDA graphs), fixed batch size."""

import torch

from acme.factory import make_plain

WIDTH = 256


def setup(device):
    return {"model": make_plain(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
