"""A Python int argument that changes every iteration (a step counter passed into the model).

What torch should report (2.11 and 2.13; specialize_int=False, automatic dynamic shapes):
- dynamo: k=0 compiles a graph specialized on the value (guard `k == 0`); k=1 fails that guard and
  recompiles once with k as a SymInt graph input (recompiles log: "triggered by ... k == 0"); seen on
  2.13 CPU: 2 dynamo compiles for k = 0..13.
- inductor gets the int as a graph input -> cudagraph trees key on it: cudagraphify_impl records
  one tree function per distinct value ("Recording cudagraph tree for symint key 1", 2, 3, ...),
  each warmed up once and never recorded because each value is seen once -> 0 CUDAGraphNodes for
  the dynamic graph and no replays, although no skip is reported (cudagraph_skips == 0).
- after 8 distinct values: WARNING "CUDAGraph supports dynamic shapes by recording a new graph for
  each distinct input size. ... We have observed 9 distinct sizes. ..." (talks of sizes, here it is
  a Python int).
- the step returns `offset` (compiled minus eager-without-k) and `expected` (= k) per iteration.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32
PROBE_ITERATIONS = {"warmup": 3, "steady": 10}


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x, k: int):
        return torch.relu(self.lin(x)) + k


def setup(device):
    torch.manual_seed(0)
    net = Net().to(device).eval()
    return {"model": torch.compile(net, mode="reduce-overhead"), "raw": net}  # expect: CG704


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device), "k": i}


@torch.no_grad()
def step(model, raw, x, k):
    y = model(x, k)  # expect: CG702  (k changes every call: recompiles and graphs per value)
    base = torch.relu(raw.lin(x))  # eager, without k
    # correctness check: a graph that baked an old k would give offset != expected
    return {"y": y, "offset": (y - base).mean(), "expected": torch.tensor(float(k))}
