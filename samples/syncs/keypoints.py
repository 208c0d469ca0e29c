"""Keypoint decoding: the (row, column) of each heatmap's peak, by torch.unravel_index of the flat argmax.

Expected: CG101. torch.unravel_index is Python code in torch (torch/functional.py) that copies the shape's strides
to the GPU with torch.tensor(..., device=indices.device) on every call: a copy from pageable host memory, which
waits (the sync table's Python-level entry). Integer division by the width (`flat // w, flat % w`) does not.
"""

import torch


def setup(device):
    return {"head": torch.nn.Conv2d(8, 4, 3, padding=1).to(device)}


def inputs(i, device):
    return {"feats": torch.randn(2, 8, 24, 32, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def step(head, feats):
    heat = head(feats)
    flat = heat.flatten(2).argmax(-1)
    rows, cols = torch.unravel_index(flat, heat.shape[-2:])  # expect: CG101
    return torch.stack([rows, cols], -1).float()
