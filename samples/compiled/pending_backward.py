"""Forward in training mode, called again and again without backward (outputs still need grad).

The step keeps the last output (as logging or a metric would), so at each new call the previous
forward's outputs are alive and its backward is pending. What torch should report:
- one UserWarning (warnings.warn, cudagraph_trees.py check_warn_on_unable_to_start_executing), at the
  3rd call:
  2.11: "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards. Consider
         running with torch.no_grad() or using torch.compiler.cudagraph_mark_step_begin() before each
         model invocation"
  2.13: "Unable to hit fast path of CUDAGraphs because outputs from a previous step still require
         backward. Ensure backward() is invoked or detach outputs. You may also call
         torch.compiler.cudagraph_mark_step_begin() before each model invocation."
- no skip record, cudagraph_skips == 0, yet no graph is ever recorded: the tree stays in warmup
  (every call is a CUDAWarmupNode chained to the previous one), 0 CUDAGraphNodes,
  no cudaGraphLaunch in the profile.
Compare pending_backward_mark_step.py (the fix).
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32
_last = [None]  # keeps the previous output alive, like a metric kept for logging


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH)).to(device)
    return {"model": torch.compile(model, mode="reduce-overhead")}  # expect: CG703, CG704


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


def step(model, x):
    out = model(x)  # grad mode on, parameters require grad: a FORWARD graph whose backward never runs
    _last[0] = out
    return out
