"""Scores of a few fixed classes, picked by indexing with a Python list (`logits[:, [0, 5, 9]]`).

Expected: CG101. torch turns the list into an index tensor on the host and copies it to the GPU on every call, a
copy from pageable memory that waits (outside any aten op: the sync table's Python-level entry for
`Tensor.__getitem__`). A device index tensor made once in setup (`logits.index_select(1, cols)`) does not.
"""

import torch


def setup(device):
    return {"head": torch.nn.Linear(32, 16).to(device)}


def inputs(i, device):
    return {"x": torch.randn(8, 32, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def step(head, x):
    logits = head(x)
    picked = logits[:, [0, 5, 9]]  # expect: CG101
    return picked.softmax(-1)
