"""In-place update of a (fresh, non-static) input inside the compiled region.

What torch should report (2.11 and 2.13; cudagraph_support_input_mutation=True outside fbcode, so the
check happens in the tree at the first call, cudagraph_trees.py `_update_non_cudagraph_managed_mutation`):
- one WARNING on torch._inductor.cudagraph_utils.__cudagraphs:
  "skipping cudagraphs due to mutated inputs (1 instances). Found from : \n File
  \".../input_mutation.py\", line N, in forward\n    x.mul_(0.5)"
- counters["inductor"]["cudagraph_skips"] == 1 (warned once per function).
- the function then runs its compiled code without a graph on every call: 0 CUDAGraphNodes,
  profiler shows no cudaGraphLaunch.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        x.mul_(0.5)  # expect: CG701
        return torch.relu(self.lin(x))


def setup(device):
    torch.manual_seed(0)
    return {"model": torch.compile(Net().to(device).eval(), mode="reduce-overhead")}  # expect: CG704


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
