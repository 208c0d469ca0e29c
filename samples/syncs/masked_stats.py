"""Per-feature statistics over the valid positions of a padded batch, with torch.masked.

Expected: CG402 (a sync on the GPU). torch.masked.mean is Python code in torch (torch/masked/_ops.py) that builds
its reduction's identity with torch.tensor(0, device=...) on every call: a copy of Python data to the GPU, which
waits. `(x * m).sum(0) / m.sum(0)` with m = mask.float() computes the same without it.
"""

import torch


def setup(device):
    return {}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    x = torch.randn(64, 16, generator=g)
    return {"x": x.to(device), "valid": (torch.rand(64, 16, generator=g) > 0.3).to(device)}


@torch.no_grad()
def step(x, valid):
    mean = torch.masked.mean(x, 0, mask=valid)  # expect: CG402
    return x - mean
