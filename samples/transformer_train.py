"""Transformer-block training step: forward, backward and a capturable AdamW step in one graph.

    cgtool capture samples/transformer_train.py

The optimizer is created with capturable=True (its step counters live on the GPU), and gradients are
reset with set_to_none=True inside the step, as in PyTorch's whole-network capture example.
"""

import torch
from torch import nn
import torch.nn.functional as F

DIM, HEADS, SEQ, BATCH = 256, 4, 64, 8


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.drop(self.proj(att.transpose(1, 2).reshape(b, t, d)))
        return x + self.drop(self.mlp(self.norm2(x)))


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(Block(DIM, HEADS), Block(DIM, HEADS), nn.Linear(DIM, DIM)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    x = torch.randn(BATCH, SEQ, DIM, generator=g)
    y = torch.randn(BATCH, SEQ, DIM, generator=g)
    return {"x": x.to(device), "y": y.to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()
