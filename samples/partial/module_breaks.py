"""Partial capture: a training step whose model has one submodule that cannot be captured (`ScaleByMax`
reads the largest activation on the host with `.item()`); the encoder and the head capture on their own.

`cgtool capture --modules 1` maps it: `model.encoder` and `model.head` graph (forward and backward, as
torch.cuda.make_graphed_callables does), `model.scale` fails at the `.item()` line.
"""

import torch
import torch.nn.functional as F
from torch import nn


class ScaleByMax(nn.Module):
    def forward(self, x):
        top = x.detach().abs().max().item()  # expect: CG101
        return x / max(top, 1.0)


class Net(nn.Module):
    def __init__(self, dim: int = 256) -> None:
        super().__init__()
        self.encoder = nn.Sequential(*[nn.Sequential(nn.Linear(dim, dim), nn.GELU()) for _ in range(6)])
        self.scale = ScaleByMax()
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, 10))

    def forward(self, x):
        return self.head(self.scale(self.encoder(x)))


def setup(device):
    torch.manual_seed(0)
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device), "y": torch.randint(0, 10, (64,), generator=g).to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()
