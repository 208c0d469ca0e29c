"""PCA whitening of a batch of features inside the step.

Expected: CG101. torch.linalg.eigh (aten._linalg_eigh) synchronizes on CUDA (the solver's info is read on the host).
"""

import torch


def setup(device):
    return {}


def inputs(i, device):
    return {"x": torch.randn(256, 32, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def step(x):
    xc = x - x.mean(0, keepdim=True)
    cov = xc.T @ xc / (x.shape[0] - 1)
    evals, evecs = torch.linalg.eigh(cov)  # expect: CG101
    return xc @ evecs / torch.sqrt(evals + 1e-5)
