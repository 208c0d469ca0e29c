"""Hazards (three): a NaN guard that reads the loss on the host, a side stream entered without a fork from
the capturing stream, and noise from a custom CUDA generator. A GPU capture fails at the guard.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    return {"net": net, "opt": opt, "side": torch.cuda.Stream(), "gen": torch.Generator(device).manual_seed(1)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 128, generator=g).to(device)}


def step(net, opt, side, gen, x):
    opt.zero_grad(set_to_none=False)
    loss = net(x).pow(2).mean()
    if loss.isnan().any().item():  # expect: CG101
        return loss.detach()
    with torch.cuda.stream(side):  # expect: CG201
        stats = x.abs().mean(0)  # expect: CG201
    noise = torch.randn(x.shape, device=x.device, generator=gen)  # expect: CG401
    loss = loss + 0.0 * (noise.mean() + stats.mean())
    loss.backward()
    opt.step()
    return loss.detach()
