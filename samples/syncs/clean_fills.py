"""The same ops with the arguments that do not synchronize: fills from Python numbers, one_hot with num_classes,
linspace with Python bounds, cholesky_ex without error checks, membership by comparison.

Expected: no finding.
"""

import torch
import torch.nn.functional as F


def setup(device):
    return {"stop_ids": torch.tensor([2, 7, 11], device=device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 16, generator=g).to(device), "keep": (torch.rand(16, 16, generator=g) > 0.2).to(device)}


@torch.no_grad()
def step(stop_ids, x, keep):
    scores = x.masked_fill(~keep, -1e4)
    tokens = scores.argmax(-1)
    onehot = F.one_hot(tokens, num_classes=16)
    stop = (tokens[:, None] == stop_ids).any(-1)
    grid = torch.linspace(-3.0, 3.0, 8, device=x.device)
    chol, _ = torch.linalg.cholesky_ex(x @ x.T + 16 * torch.eye(16, device=x.device), check_errors=False)
    return scores.softmax(-1).sum() + onehot.sum() + stop.sum() + grid.sum() + chol.sum()
