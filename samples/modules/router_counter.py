"""Module map (`cgtool capture --modules 1`), inference: an embedding, four blocks, a top-1 router whose dispatch
indexes tokens with `nonzero` (cannot be captured: the number of tokens per expert depends on the data), a module
that counts its calls in a Python attribute and scales by it (its graph would replay the first call's scale), and a
head.

The map: `model.router` fails at the `nonzero` line (CG102), `model.counter` at its host value (CG402); the
embedding, the four blocks and the head graph on their own (forward only, as the step runs under no_grad), and the
step with those six graphed matches eager from identical state (the counter's attribute included).
"""

import torch
from torch import nn

VOCAB, DIM, EXPERTS = 1000, 512, 4


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Router(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(DIM, EXPERTS)
        self.experts = nn.ModuleList(nn.Linear(DIM, DIM) for _ in range(EXPERTS))

    def forward(self, x):
        flat = x.reshape(-1, DIM)
        choice = self.gate(flat).argmax(-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            idx = (choice == e).nonzero().squeeze(-1)  # expect: CG102
            out[idx] = expert(flat[idx])
        return x + out.reshape(x.shape)


class CallCounter(nn.Module):
    """Scales by a value that depends on how often it was called: host state."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        scale = torch.tensor(1.0 / (1.0 + 0.01 * self.calls), device=x.device)  # expect: CG402
        return x * scale


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(4))
        self.router = Router()
        self.counter = CallCounter()
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, ids):
        h = self.embed(ids)
        h = self.blocks[1](self.blocks[0](h))
        h = self.router(h)
        h = self.blocks[3](self.blocks[2](h))
        return self.head(self.counter(h))


def setup(device):
    torch.manual_seed(0)
    return {"model": Model().to(device).eval()}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"ids": torch.randint(0, VOCAB, (8, 64), generator=g).to(device)}


@torch.no_grad()
def step(model, ids):
    return model(ids)
