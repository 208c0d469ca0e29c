"""Hazard: a side stream forked with wait_stream and never joined back.

Expected: CG203 (category unjoined-stream), at the fork. Capture ends with "capturing stream has
unjoined work", which names no line.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    enc = nn.Linear(64, 64).to(device)
    aux = nn.Linear(64, 8).to(device)
    return {"enc": enc, "aux": aux, "side": torch.cuda.Stream()}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 64, generator=g).to(device)}


@torch.no_grad()
def step(enc, aux, side, x):
    h = enc(x)
    side.wait_stream(torch.cuda.current_stream())  # expect: CG203
    with torch.cuda.stream(side):
        extra = aux(h)  # auxiliary head, overlapped on the side stream
    return h, extra  # missing: torch.cuda.current_stream().wait_stream(side)
