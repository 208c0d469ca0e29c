"""Helpers imported by step.py (another file of the user's)."""

import torch


def jitter(x, gen):
    shift = torch.randint(-2, 3, (x.shape[0], 1), generator=gen, device=x.device)  # expect: CG401
    return x + shift.to(x.dtype) * 0.01


def keep_valid(x, lengths):
    return x[lengths > 0]  # expect: CG102
