"""Written only to the documented script contract (docs/script-contract.md), unseen style: the hazards live in
helper functions of another module that the step imports (augment.py): noise from a generator of its own, a
boolean-mask selection of confident rows, and a copy of a statistic to the host for logging."""

import torch
from torch import nn

from augment import confident_rows, jitter, to_host


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 8)).to(device).eval()
    gen = torch.Generator(device=device)
    gen.manual_seed(11)
    return {"model": model, "gen": gen, "history": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 32, generator=g).to(device)}


@torch.no_grad()
def step(model, gen, history, x):
    logits = model(jitter(x, gen))
    picked = confident_rows(logits, 0.3)
    history.append(to_host(picked.sum()))
    return logits
