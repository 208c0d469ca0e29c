"""Helpers of the augment_helpers script, in their own module: the hazards sit here, the script calls them."""

import torch


def jitter(x, gen):
    return x + 0.05 * torch.randn(x.shape, device=x.device, generator=gen)  # expect: CG401


def confident_rows(logits, threshold):
    conf = logits.softmax(-1).amax(-1)
    return logits[conf > threshold]  # expect: CG102


def to_host(t):
    return t.detach().cpu()  # expect: CG103
