"""Clean: a training step with dropout (random numbers from the default generator) and plain SGD.

Expected: no error findings. Dropout draws from the default CUDA generator, whose offset a graph
advances on each replay.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(128, 64)

    def forward(self, x):
        return self.fc2(self.drop(F.gelu(self.fc1(x))))


def setup(device):
    torch.manual_seed(0)
    model = Net().to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 64, generator=g).to(device)}


def step(model, opt, x):
    opt.zero_grad(set_to_none=True)
    out = model(x)
    loss = F.mse_loss(out, x) + 1e-4 * sum(p.pow(2).sum() for p in model.parameters())
    loss.backward()
    opt.step()
    return loss.detach()
