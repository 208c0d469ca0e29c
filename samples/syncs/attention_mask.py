"""Attention scores masked with a fill value taken from the scores themselves (a device scalar).

Expected: CG101. masked_fill with a 0-dim CUDA tensor as the value reads it on the host; with a Python
number (`-1e4`, see clean_fills.py) it does not.
"""

import torch


def setup(device):
    return {}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"q": torch.randn(4, 16, 32, generator=g).to(device), "k": torch.randn(4, 16, 32, generator=g).to(device),
            "keep": (torch.rand(4, 16, 16, generator=g) > 0.2).to(device)}


@torch.no_grad()
def step(q, k, keep):
    scores = q @ k.transpose(-1, -2) / 32 ** 0.5
    floor = scores.min() - 1
    scores = scores.masked_fill(~keep, floor)  # expect: CG101
    return scores.softmax(-1)
