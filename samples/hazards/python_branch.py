"""Hazard: a Python branch that alternates between iterations (`if self.calls % 2`).

Expected: CG302 (category control-flow), at the `if`. Capture records one branch; every replay repeats it.
"""

import torch
from torch import nn


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(32, 32)
        self.head_a = nn.Linear(32, 4)
        self.head_b = nn.Linear(32, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        h = torch.relu(self.body(x))
        if self.calls % 2:  # expect: CG302
            return self.head_a(h)
        return self.head_b(h)


def setup(device):
    torch.manual_seed(0)
    return {"model": TwoHeads().to(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(8, 32, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
