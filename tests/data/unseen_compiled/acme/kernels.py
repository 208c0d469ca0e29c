"""Fused pointwise kernels, compiled once at import time."""

import torch
import torch.nn.functional as F


@torch.compile(mode="reduce-overhead")
def fused_bias_gelu_scale(x: torch.Tensor, bias: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    h = F.gelu(x + bias) * scale
    h = h * torch.sigmoid(h) + 0.5 * x
    peak = h.abs().max().item()  # expect: CG705
    if peak > 1e6:
        raise FloatingPointError(f"fused_bias_gelu_scale overflowed: peak {peak}")
    return h
