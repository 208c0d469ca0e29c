"""Hazard: a Python-side position counter used to write a KV cache (an incremental decoder).

Expected: CG503 (category replay-mismatch) on the GPU: capture succeeds, but every replay writes the
same cache slot, so replay differs from eager. The CPU run names the cause: CG402 (category host-input),
the Python index changes between iterations and the graph keeps the captured one.
"""

import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, dim=64, max_len=32):
        super().__init__()
        self.k = nn.Linear(dim, dim)
        self.register_buffer("cache", torch.zeros(max_len, dim))
        self.pos = 0

    def forward(self, x):
        self.cache[self.pos] = self.k(x)  # expect: CG402
        self.pos += 1
        return self.cache.sum(0)


def setup(device):
    torch.manual_seed(0)
    return {"dec": Decoder().to(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, generator=g).to(device)}


@torch.no_grad()
def step(dec, x):  # expect: CG503 (replay differs; placed on the step, naming line 20 as the likely cause)
    return dec(x)
