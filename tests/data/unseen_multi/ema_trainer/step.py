"""Written only to the documented script contract (docs/script-contract.md), unseen style: a Trainer object
whose methods do the work; step() only delegates. Hazards: a reseed in a helper method, a running loss average
kept on the trainer and rebound every iteration, and the average read back as a Python float."""

import torch
import torch.nn.functional as F
from torch import nn


class Trainer:
    def __init__(self, device):
        self.model = nn.Sequential(nn.Linear(48, 96), nn.ReLU(), nn.Dropout(0.2), nn.Linear(96, 4)).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3, capturable=device.type == "cuda")
        self.loss_avg = torch.zeros((), device=device)
        self.seed = 7

    def _reseed(self):
        torch.manual_seed(self.seed)  # expect: CG405

    def _track(self, loss):
        self.loss_avg = 0.98 * self.loss_avg + 0.02 * loss.detach()  # expect: CG406

    def train_step(self, x, y):
        self._reseed()
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        self._track(loss)
        return loss.detach(), float(self.loss_avg)  # expect: CG101


def setup(device):
    torch.manual_seed(0)
    return {"trainer": Trainer(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(24, 48, generator=g).to(device), "y": torch.randint(0, 4, (24,), generator=g).to(device)}


def step(trainer, x, y):
    return trainer.train_step(x, y)
