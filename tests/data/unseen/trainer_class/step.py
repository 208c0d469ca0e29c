"""Unseen style: the work lives in methods of a Trainer class; step() only delegates.

Hazards: a NaN guard on the loss (sync) and metrics moved to the host (device-to-host copy).
"""

import torch
import torch.nn.functional as F
from torch import nn


class Trainer:
    def __init__(self, device):
        self.model = nn.Sequential(nn.Linear(20, 40), nn.ReLU(), nn.Linear(40, 3)).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3, capturable=True)
        self.metrics = []

    def _guard(self, loss):
        if not torch.isfinite(loss):  # expect: CG101
            raise FloatingPointError("loss diverged")

    def _log(self, logits):
        self.metrics.append(logits.detach().cpu())  # expect: CG103

    def train_step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self._guard(loss)
        loss.backward()
        self.opt.step()
        self._log(logits)
        return loss.detach()


def setup(device):
    torch.manual_seed(0)
    return (Trainer(device),)


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return (torch.randn(10, 20, generator=g).to(device), torch.randint(0, 3, (10,), generator=g).to(device))


def step(trainer, x, y):
    return trainer.train_step(x, y)
