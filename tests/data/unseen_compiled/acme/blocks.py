"""Model blocks that compile themselves on construction."""

import torch
from torch import nn


class GatedBlock(nn.Module):
    def __init__(self, width: int = 256, hidden: int = 512):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, width)
        self.compile(mode="reduce-overhead")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(self.fc1(x))
        if h.mean() > 0:  # expect: CG705
            h = self.act(h)
        else:
            h = torch.tanh(h)
        return self.fc2(h) + x
