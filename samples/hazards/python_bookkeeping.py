"""Hazard: the step keeps its own Python bookkeeping — a step counter on a trainer object and a list of losses.

Expected: CG408 (category python-state, warning) at the counter (the step's `def` line: no op makes a number) and
at the line that puts the loss into the list. Nothing here stops a capture (an SGD step like the clean samples';
its GPU run, tests/gpu/test_lint_gpu.py, is still to come), but a replay runs none of the step's Python: after
capture the counter stays where capture left it and the list keeps one tensor, the graph's own output memory,
overwritten by every replay. Fix: count and log after each replay, outside the graph (`graph.replay();
trainer.step_count += 1; losses.append(static_loss.clone())`).
"""

import torch
import torch.nn.functional as F
from torch import nn


class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt, self.step_count = model, opt, 0


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return {"trainer": Trainer(model, opt), "losses": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(8, 32, generator=g).to(device)}


def step(trainer, losses, x):  # expect: CG408
    trainer.opt.zero_grad(set_to_none=False)
    loss = F.mse_loss(trainer.model(x), x)
    loss.backward()
    trainer.opt.step()
    trainer.step_count += 1
    losses.append(loss.detach())  # expect: CG408
    return loss.detach()
