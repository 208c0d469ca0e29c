"""Multi-stream fork/join step: two independent branches run on side streams, then join.

    cgtool capture samples/multistream.py

Inside capture, side streams must fork from the capturing stream (wait_stream) and join back
before the step returns; the graph then shows the two branches in parallel.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    left = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).to(device)
    right = nn.Sequential(nn.Linear(1024, 1024), nn.Tanh(), nn.Linear(1024, 1024)).to(device)
    streams = (torch.cuda.Stream(device), torch.cuda.Stream(device))
    return {"left": left, "right": right, "streams": streams}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 1024, generator=g).to(device)}


@torch.no_grad()
def step(left, right, streams, x):
    main = torch.cuda.current_stream()
    s1, s2 = streams
    s1.wait_stream(main)  # fork
    s2.wait_stream(main)
    with torch.cuda.stream(s1):
        a = left(x)
    with torch.cuda.stream(s2):
        b = right(x)
    main.wait_stream(s1)  # join
    main.wait_stream(s2)
    return a + b
