"""Module map (`cgtool capture --modules 1`), a graphed set that truly differs from eager: `mixer` halves its
input in place, and the step uses that input again afterwards. Graphed, the module halves its own static copy of
the input; the caller's tensor stays as it was, so the step computes something else.

The map captures all four modules, finds that the step with them graphed differs from eager, checks each alone,
names `mixer` (it updates its input in place), graphs `mixer.lin` in its place, and recommends `embed`, `body`,
`head` and `mixer.lin`, with their speedup.
"""

import torch
from torch import nn

DIM = 512


class Mixer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(DIM, DIM)

    def forward(self, x):
        x.mul_(0.5)  # the caller's tensor, updated in place
        return self.lin(x)


def setup(device):
    torch.manual_seed(0)
    body = nn.Sequential(*[nn.Sequential(nn.LayerNorm(DIM), nn.Linear(DIM, DIM), nn.GELU()) for _ in range(6)])
    parts = {"embed": nn.Embedding(1000, DIM), "body": body, "mixer": Mixer(), "head": nn.Linear(DIM, 1000)}
    return {name: m.to(device).eval() for name, m in parts.items()}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"ids": torch.randint(0, 1000, (8, 64), generator=g).to(device)}


@torch.no_grad()
def step(embed, body, mixer, head, ids):
    h = body(embed(ids))
    y = mixer(h)
    return head(h + y)
