"""`nn.Sequential(...).compile(mode="reduce-overhead")` compiles nothing: Module.compile() compiles the module's
`_call_impl`, and dynamo skips code that lies wholly in torch's own files (nn.Sequential's forward included), so
every call runs eagerly, with no CUDA graph and no error (seen on torch 2.11 on an H100/H200 and 2.13 on the CPU).
`torch.compile(model, ...)`, which wraps the module in an OptimizedModule, compiles the same model."""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.SiLU(), nn.Linear(1024, 256)).to(device).eval()
    model.compile(mode="reduce-overhead")  # expect: CG701
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 256, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
