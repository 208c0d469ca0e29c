"""Hazard: a running average kept on a module attribute, rebound to a new tensor every iteration.

Expected: CG406 (category rebound-state). `norm.avg = 0.9 * norm.avg + ...` makes a new tensor and points the
attribute at it. A CUDA graph replays the ops it captured on the tensors they used at capture: every replay
reads the memory of the tensor that was `norm.avg` when the graph was captured (freed during capture, as
nothing else holds it) and writes the capture's new tensor, so the average does not carry over between
replays; eager keeps averaging.
"""

import torch
from torch import nn


class RunningNorm(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.avg = torch.zeros(dim)

    def forward(self, x):
        y = self.proj(x)
        return y - self.avg


def setup(device):
    torch.manual_seed(0)
    norm = RunningNorm().to(device)
    norm.avg = norm.avg.to(device)
    return {"norm": norm}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 64, generator=g).to(device)}


@torch.no_grad()
def step(norm, x):
    out = norm(x)
    norm.avg = 0.9 * norm.avg + 0.1 * out.mean(0)  # expect: CG406
    return out
