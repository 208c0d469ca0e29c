"""Written only to the documented script contract (docs/script-contract.md), unseen style: a training step
with a loop of gradient-accumulation micro-batches and an SGD optimizer. Hazards: statistics computed on a side
stream entered without a fork, a decaying scale made from a Python number every iteration, and a synchronize
at the end to time the step."""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.SiLU(), nn.Linear(64, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {"model": model, "opt": opt, "side": torch.cuda.Stream(), "sched": {"t": 0}}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(4, 16, 32, generator=g).to(device), "y": torch.randn(4, 16, 1, generator=g).to(device)}


def step(model, opt, side, sched, x, y):
    opt.zero_grad(set_to_none=False)
    total = torch.zeros((), device=x.device)
    for k in range(x.shape[0]):
        loss = F.mse_loss(model(x[k]), y[k]) / x.shape[0]
        loss.backward()
        total += loss.detach()
    with torch.cuda.stream(side):  # expect: CG201
        spread = x.std(dim=(0, 1))  # expect: CG201
    sched["t"] += 1
    decay = torch.tensor(0.999 ** sched["t"], device=x.device)  # expect: CG402
    opt.step()
    torch.cuda.synchronize()  # expect: CG104
    return total * decay, spread
