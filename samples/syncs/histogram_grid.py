"""A histogram grid spanning the batch's own range: linspace with bounds taken from device min/max.

Expected: CG101. torch.linspace with tensor bounds (aten.linspace.Tensor_Tensor) reads them on the host.
"""

import torch


def setup(device):
    return {}


def inputs(i, device):
    return {"x": torch.randn(4096, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def step(x):
    edges = torch.linspace(x.min(), x.max(), 33, device=x.device)  # expect: CG101
    idx = torch.bucketize(x, edges)
    return torch.zeros(34, device=x.device).index_add_(0, idx, torch.ones_like(x))
