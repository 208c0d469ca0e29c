"""Hazard: polling an event inside the step (is the forward done yet?).

Expected: CG105 (category sync). CUDA does not permit a stream or event query while a stream captures: the
query invalidates the capture, which fails when it ends (`operation failed due to a previous error during capture`). Record the event in
the step; query it after replay.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {"net": nn.Linear(256, 256).to(device), "done": torch.cuda.Event()}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device)}


@torch.no_grad()
def step(net, done, x):
    out = net(x)
    done.record()
    finished = done.query()  # expect: CG105
    return out, finished
