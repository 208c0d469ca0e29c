"""A Gaussian-process posterior mean in the step: Cholesky of the kernel matrix, then a triangular solve.

Expected: CG101. torch.linalg.cholesky checks its `info` on the host (aten._linalg_check_errors), so the
host waits for the GPU; torch.linalg.cholesky_ex(..., check_errors=False) does not.
"""

import torch


def setup(device):
    torch.manual_seed(0)
    return {"train_x": torch.randn(128, 4, device=device), "train_y": torch.randn(128, 1, device=device)}


def inputs(i, device):
    return {"x": torch.randn(32, 4, generator=torch.Generator().manual_seed(i)).to(device)}


def _rbf(a, b):
    return torch.exp(-0.5 * torch.cdist(a, b).pow(2))


@torch.no_grad()
def step(train_x, train_y, x):
    k = _rbf(train_x, train_x) + 1e-2 * torch.eye(train_x.shape[0], device=train_x.device)
    chol = torch.linalg.cholesky(k)  # expect: CG101
    alpha = torch.cholesky_solve(train_y, chol)
    return _rbf(x, train_x) @ alpha
