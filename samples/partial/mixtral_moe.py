"""Partial capture, real library: a transformers Mixtral sparse-MoE block (random weights, nothing
downloaded) in its eager experts mode, between two dense layers, in a training step.

The eager experts loop finds the experts hit with `nonzero()` and the tokens of each with `torch.where`
(data-dependent shapes): whole-step capture is unsafe there; piecewise capture graphs the rest.
Needs transformers (MixtralSparseMoeBlock, `experts_implementation="eager"`).
"""

import torch
import torch.nn.functional as F
from torch import nn
from transformers import MixtralConfig
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.inp = nn.Linear(config.hidden_size, config.hidden_size)
        self.moe = MixtralSparseMoeBlock(config)
        self.out = nn.Linear(config.hidden_size, 8)

    def forward(self, x):
        h = self.moe(F.gelu(self.inp(x)))  # expect: CG102
        h = h[0] if isinstance(h, tuple) else h
        return self.out(h)


def setup(device):
    torch.manual_seed(0)
    config = MixtralConfig(hidden_size=128, intermediate_size=256, num_local_experts=4, num_experts_per_tok=2,
                           experts_implementation="eager")
    model = Model(config).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(2, 32, 128, generator=g).to(device), "y": torch.randint(0, 8, (2, 32), generator=g).to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    loss.backward()
    opt.step()
    return loss.detach()
