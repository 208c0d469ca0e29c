"""Clean: two branches overlapped on side streams, forked from and joined back to the current stream.

Expected: no error findings. Each side stream waits on the capturing stream before its work (fork) and
the capturing stream waits on both before the step returns (join); an event joins the second.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {
        "left": nn.Sequential(nn.Linear(128, 128), nn.ReLU()).to(device),
        "right": nn.Sequential(nn.Linear(128, 128), nn.Tanh()).to(device),
        "s1": torch.cuda.Stream(),
        "s2": torch.cuda.Stream(),
    }


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 128, generator=g).to(device)}


@torch.no_grad()
def step(left, right, s1, s2, x):
    main = torch.cuda.current_stream()
    s1.wait_stream(main)
    s2.wait_stream(main)
    with torch.cuda.stream(s1):
        a = left(x)
    with torch.cuda.stream(s2):
        b = right(x)
        done = torch.cuda.Event()
        done.record()
    main.wait_stream(s1)
    main.wait_event(done)
    return a + b
