"""pending_backward.py with torch.compiler.cudagraph_mark_step_begin() at the start of each step.

mark_step_begin (cudagraph_trees.mark_step_begin: MarkStepBox.mark_step_counter -= 1) tells the trees
a new iteration starts, so the pending backward of the previous forward no longer blocks a new
generation. What torch should report:
- no "Unable to hit fast path" warning, no skip, cudagraph_skips == 0.
- tree: one FORWARD function, recorded on the 2nd call, replayed afterwards -> 1 CUDAGraphNode.
- the previous step's output (kept in _last) is overwritten by the next replay: reading it after
  the next call would give the new values (silently) or raise the "overwritten" error.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32
_last = [None]


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH)).to(device)
    return {"model": torch.compile(model, mode="reduce-overhead")}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


def step(model, x):
    torch.compiler.cudagraph_mark_step_begin()
    out = model(x)
    _last[0] = out
    return out
