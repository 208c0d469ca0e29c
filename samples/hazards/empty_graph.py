"""Hazard: the step does only host work (metrics bookkeeping on CPU tensors).

Expected: CG502 (category empty-graph), a warning: the captured graph has no GPU work, so replay does
nothing. Only the GPU run establishes it; the CPU run may warn, and must report no error.
"""

import torch


def setup(device):
    return {"losses": [0.9, 0.7, 0.6, 0.55]}


def inputs(i, device):
    return {"new_loss": 0.5 - 0.01 * i}


def step(losses, new_loss):
    losses.append(new_loss)
    window = torch.tensor(losses[-4:])  # expect: CG502
    return window.mean().item(), window.std().item()
