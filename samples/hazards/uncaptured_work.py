"""Hazard: work on a stream that was never forked from the capturing stream (a "copy stream" kept in setup).

Expected: CG201 (category uncaptured-work), at the switch and at the work. The copy runs once at capture
time on a stream that is not capturing and is left out of the graph; joining it back makes capture fail.
The GPU run sees it per op (is_current_stream_capturing); the CPU run sees it through the stream stand-ins.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {
        "net": nn.Linear(256, 256).to(device),
        "copy_stream": torch.cuda.Stream(),
        "snapshot": torch.zeros(64, 256, device=device),
    }


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device)}


@torch.no_grad()
def step(net, copy_stream, snapshot, x):
    y = net(x)
    with torch.cuda.stream(copy_stream):  # expect: CG201
        snapshot.copy_(y, non_blocking=True)  # expect: CG201
    return y
