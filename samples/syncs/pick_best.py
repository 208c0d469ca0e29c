"""Pick the best candidate by indexing with a 0-dim device tensor (`cands[scores.argmax()]`).

Expected: CG101. Indexing with a 0-dim integer tensor turns it into a Python index (aten._local_scalar_dense).
"""

import torch


def setup(device):
    return {}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"cands": torch.randn(10, 8, generator=g).to(device), "scores": torch.randn(10, generator=g).to(device)}


@torch.no_grad()
def step(cands, scores):
    return cands[scores.argmax()] * 2  # expect: CG101
