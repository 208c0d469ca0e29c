"""A small pre-norm transformer block written here (its forward is the user's code), compiled by torch.compile
without CUDA graphs: cgtool captures the compiled code itself. Issue 22's compiled step
(tests/gpu/test_node_lines_gpu.py): each kernel node's line comes from inductor's line map of its FX node."""

import torch
import torch.nn.functional as F
from torch import nn

D, H, T, B = 256, 4, 64, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.up, self.down = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        q, k, v = self.qkv(self.norm1(x)).view(B, T, 3, H, D // H).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def setup(device):
    torch.manual_seed(0)
    return {"model": torch.compile(Block().to(device).eval())}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(B, T, D, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
