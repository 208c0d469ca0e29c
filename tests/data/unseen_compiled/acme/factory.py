"""Model factory: builds the standard MLP and hands it back compiled."""

import torch
from torch import nn


def _mlp(device: torch.device, width: int = 256, hidden: int = 1024) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(width, hidden),
        nn.GELU(),
        nn.LayerNorm(hidden),
        nn.Linear(hidden, width),
    ).to(device).eval()


def make(device: torch.device) -> nn.Module:
    model = _mlp(device)
    return torch.compile(model, mode="reduce-overhead")


def make_plain(device: torch.device) -> nn.Module:
    model = _mlp(device)
    return torch.compile(model)
