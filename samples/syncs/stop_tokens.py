"""Generation bookkeeping: which sequences emitted a stop token, by membership in the stop-token set.

Expected: CG101. torch.isin synchronizes on CUDA for some inputs (issue 27 measured it on an H100, torch 2.11; the
GPU test confirms it for these sizes); comparing against each stop token (`(tokens[:, None] == stop_ids).any(-1)`)
does not.
"""

import torch


def setup(device):
    return {"stop_ids": torch.tensor([2, 7, 11], device=device), "done": torch.zeros(256, dtype=torch.bool, device=device)}


def inputs(i, device):
    return {"logits": torch.randn(256, 32, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def step(stop_ids, done, logits):
    tokens = logits.argmax(-1)
    done |= torch.isin(tokens, stop_ids)  # expect: CG101
    return tokens
