"""Unseen style: the hazard is inside an nn.Module forward (a mixture-of-experts router that loops
over the experts actually chosen), and the model is moved with .cuda()-style calls on a CPU run."""

import torch
from torch import nn


class MoE(nn.Module):
    def __init__(self, dim=32, experts=4):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))

    def forward(self, x):
        choice = self.router(x).argmax(-1)
        out = torch.zeros_like(x)
        for e in choice.unique().tolist():  # expect: CG102 CG103
            sel = choice == e
            out = out + self.experts[e](x) * sel.unsqueeze(-1)
        return out


def setup(device):
    torch.manual_seed(0)
    return {"moe": MoE().to(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(24, 32, generator=g).to(device)}


@torch.no_grad()
def step(moe, x):
    return moe(x)
