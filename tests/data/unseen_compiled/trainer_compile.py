"""Inference through a Trainer that compiled its model with mode="reduce-overhead" (in acme/trainer.py)."""

import torch
from torch import nn

from acme.trainer import Trainer

WIDTH = 512


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(WIDTH, 1024), nn.GELU(), nn.LayerNorm(1024), nn.Linear(1024, WIDTH)
    ).to(device).eval()
    trainer = Trainer(model, compile_mode="reduce-overhead")
    return {"trainer": trainer}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(trainer, x):
    return trainer.model(x)
