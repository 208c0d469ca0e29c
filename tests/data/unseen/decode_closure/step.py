"""Unseen style: step is a closure made by a factory, the state lives in a dataclass, CUDA is
hard-coded ("cuda" strings, .cuda()), and timing uses CUDA events."""

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class DecodeState:
    model: nn.Module
    cache: torch.Tensor
    pos: int = 0


def _make_step():
    timings = []

    def decode(state, token_emb):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        where = torch.arange(state.pos, state.pos + 1, device="cuda")  # expect: CG402
        state.cache.index_copy_(0, where, state.model(token_emb).unsqueeze(0))
        state.pos += 1
        end.record()
        timings.append(start.elapsed_time(end))  # expect: CG104
        return state.cache.mean(0)

    return decode


step = _make_step()


def setup(device):
    torch.manual_seed(0)
    model = nn.Linear(8, 8).cuda()
    return (DecodeState(model, torch.zeros(16, 8, device="cuda")),)


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return (torch.randn(8, generator=g).cuda(),)
