"""Hazard: the step reseeds the RNG every iteration ("for reproducibility") and then uses dropout.

Expected: CG405 (category rng) at the reseed, and CG503 (replay-mismatch) on the GPU. Eager resets the
generator each iteration, so dropout draws the same mask every time; a CUDA graph does not run
`torch.manual_seed` on replay: the captured dropout draws from the default generator's offset, which moves
on with every replay, so replay differs from eager.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 64)

    def forward(self, x):
        return self.fc2(F.dropout(F.gelu(self.fc1(x)), p=0.2, training=self.training))


def setup(device):
    torch.manual_seed(0)
    return {"model": Net().to(device).train()}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 64, generator=g).to(device)}


@torch.no_grad()
def step(model, x):  # expect: CG503 (replay differs from eager on the GPU: the reseed is not replayed)
    torch.manual_seed(1234)  # expect: CG405
    return model(x)
