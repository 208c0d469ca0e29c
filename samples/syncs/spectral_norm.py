"""Spectral normalisation of a weight by its largest singular value, computed exactly in the step.

Expected: CG101. torch.linalg.matrix_norm(ord=2) runs an SVD (aten._linalg_svd), which synchronizes on CUDA.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {"layer": nn.Linear(64, 64).to(device)}


def inputs(i, device):
    return {"x": torch.randn(16, 64, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def step(layer, x):
    sigma = torch.linalg.matrix_norm(layer.weight, ord=2)  # expect: CG101
    return x @ (layer.weight / sigma).T + layer.bias
