"""Written only to the documented script contract (docs/script-contract.md): a denoising training step with
three hazards. Issue 20's "unseen-style" check: every marked hazard in one lint run, GPU and CPU."""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(96, 192), nn.GELU(), nn.Dropout(0.1), nn.Linear(192, 96)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=(device.type == "cuda"))
    return {"model": model, "opt": opt, "step_no": [0]}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"clean": torch.randn(32, 96, generator=g).to(device)}


def step(model, opt, step_no, clean):
    step_no[0] += 1
    noisy = clean + 0.1 * torch.randn_like(clean)
    opt.zero_grad(set_to_none=False)
    loss = (model(noisy) - clean).pow(2).mean()
    loss.backward()
    opt.step()
    bad = clean[clean.abs() > 3]  # expect: CG102
    lr_scale = torch.tensor([1.0 / step_no[0]], device=clean.device)  # expect: CG402
    print("loss", loss.item())  # expect: CG101
    return loss.detach() * lr_scale, bad.numel()
