"""Written only to the documented script contract (docs/script-contract.md), unseen style: the model is compiled
with torch.compile's default mode (inductor, no CUDA graphs), so cgtool captures the compiled code itself,
untraced. Hazards around the compiled call: a bias made from a Python number every iteration, a selection of
the large outputs by a boolean mask, and a print of the maximum. A GPU capture fails at the first; the CPU
analysis of the whole step names the rest."""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64)).to(device)
    return {"model": torch.compile(model), "calls": [0]}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 64, generator=g).to(device)}


@torch.no_grad()
def step(model, calls, x):
    y = model(x)
    calls[0] += 1
    bias = torch.tensor([0.01 * calls[0]], device=x.device)  # expect: CG402
    large = y[y > 1.0]  # expect: CG102
    print("max", y.max().item())  # expect: CG101
    return y + bias, large
