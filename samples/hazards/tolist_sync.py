"""Hazard: `.tolist()` of the predictions inside an inference step.

Expected: CG103 (category sync). `.tolist()` copies a GPU tensor to pageable host memory and waits; in
capture PyTorch raises "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the
CPU tensor is pinned".
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 50)).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 128, generator=g).to(device)}


@torch.inference_mode()
def step(model, x):
    logits = model(x)
    labels = logits.argmax(-1).tolist()  # expect: CG103
    return logits, labels
