"""A graph break inside a reduce-overhead function: `.item()` reads a GPU value on the host for an overflow
guard, so dynamo splits the function into two graphs with a host sync between them (torch logs it under
TORCH_LOGS=graph_breaks)."""

import torch


@torch.compile(mode="reduce-overhead")
def normalize(x, w):
    h = torch.relu(x @ w)
    top = h.abs().max().item()  # expect: CG705
    if top > 1e6:
        raise FloatingPointError(f"activations overflow: {top}")
    return torch.nn.functional.layer_norm(h, h.shape[-1:])


def setup(device):
    torch.manual_seed(0)
    return {"w": torch.randn(256, 256, device=device) / 16}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device)}


@torch.no_grad()
def step(w, x):
    return normalize(x, w)
