"""Clean: MLP inference under inference_mode. Expected: no error findings."""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512), nn.Linear(512, 10)).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device)}


@torch.inference_mode()
def step(model, x):
    logits = model(x)
    return logits.softmax(-1), logits.argmax(-1)
