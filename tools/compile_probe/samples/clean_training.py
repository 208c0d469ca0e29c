"""Clean training step: compiled forward+loss (reduce-overhead), backward, eager AdamW.

What torch should report (2.11 and 2.13, default config):
- no skip record; cudagraph_skips == 0.
- tree: two functions, one FORWARD and one BACKWARD (AOTAutograd compiles the backward separately and
  it is cudagraphed too; reduce-overhead does not need capturable=True because the optimizer stays
  eager). Each is recorded once (2nd iteration) and replayed afterwards -> 2 CUDAGraphNodes, the
  backward node a child of the forward node.
- no "pending, uninvoked backwards" warning: each iteration runs backward before the next forward.
- profiler, steady state: forward+backward kernels in graph replays; zero_grad is free
  (set_to_none) and AdamW's foreach kernels plus the input copies run outside any graph.
"""

import torch
import torch.nn.functional as F
from torch import nn

WIDTH, BATCH = 256, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x, y):
        return F.mse_loss(self.body(x), y)


def setup(device):
    torch.manual_seed(0)
    net = Net().to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    return {"model": torch.compile(net, mode="reduce-overhead"), "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device),
            "y": torch.randn(BATCH, WIDTH, generator=g).to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    opt.step()
    return loss.detach()
