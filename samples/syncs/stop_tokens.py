"""Generation bookkeeping: which sequences emitted a banned or stop token, by membership in a set of 64 ids.

Expected: CG101. torch.isin on CUDA compares element by element while the set is small next to the elements
(fewer than about 10 * numel(elements) ** 0.145 ids: 22 for 256 tokens) and sorts, with a sync, otherwise; the sync
table (torch 2.11) has it syncing from 20 ids. Three stop ids would run clean; comparing against each id
(`(tokens[:, None] == stop_ids).any(-1)`, samples/syncs/clean_fills.py) never syncs.
"""

import torch


def setup(device):
    return {"stop_ids": torch.arange(2, 2 + 7 * 64, 7, device=device), "done": torch.zeros(256, dtype=torch.bool, device=device)}


def inputs(i, device):
    return {"logits": torch.randn(256, 32, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def step(stop_ids, done, logits):
    tokens = logits.argmax(-1)
    done |= torch.isin(tokens, stop_ids)  # expect: CG101
    return tokens
