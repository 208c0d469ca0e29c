"""Partial capture: an MoE-style inference step, dense layers around a top-1 router whose dispatch indexes
tokens by a data-dependent mask (`nonzero`: the number of tokens per expert depends on the data).

Whole-step capture is unsafe there (CG102: the output size depends on the data); piecewise capture graphs
the dense stretches before and after the routing and runs the dispatch eagerly between them.
"""

import torch
from torch import nn


class Routed(nn.Module):
    def __init__(self, dim: int = 256, experts: int = 4) -> None:
        super().__init__()
        self.pre = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim), nn.GELU())
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))
        self.post = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))

    def forward(self, x):
        h = self.pre(x)
        choice = self.router(h).argmax(-1)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            idx = (choice == e).nonzero().squeeze(-1)  # expect: CG102
            out[idx] = expert(h[idx])
        return self.post(out + h)


def setup(device):
    torch.manual_seed(0)
    return {"model": Routed().to(device).eval()}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(128, 256, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
