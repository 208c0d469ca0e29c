"""Unseen style: hazards inside helper functions of another file that the script imports."""

import torch
from torch import nn

from augment_ops import jitter, keep_valid


def setup(device):
    torch.manual_seed(0)
    gen = torch.Generator(device="cuda")  # hard-coded CUDA generator: the stand-in lets it run on CPU
    gen.manual_seed(7)
    return {"enc": nn.Linear(16, 16).to(device), "gen": gen}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(12, 16, generator=g).to(device), "lengths": torch.randint(0, 4, (12,), generator=g).to(device)}


@torch.no_grad()
def step(enc, gen, x, lengths):
    h = enc(jitter(x, gen))
    return keep_valid(h, lengths).mean(0)
