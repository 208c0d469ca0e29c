"""Data-dependent control flow inside the graph: torch.cond on a GPU predicate.

Inductor's lowering of torch.cond sets V.graph.disable_cudagraphs_reason whether or not graph
partitioning is on (lowering.py `cond`; only while_loop checks graph_partition). What torch should
report (2.11 and 2.13, default config and "nopartition"):
- one WARNING on torch._inductor.cudagraph_utils.__cudagraphs (raised from output_code.py
  CompiledFxGraph.__init__): "skipping cudagraphs due to control flow operator: torch.cond. Found
  from : \n File \".../control_flow_cond.py\", line N, in forward\n    return torch.cond(...)"
- cudagraph_skips == 1; 0 CUDAGraphNodes; no cudaGraphLaunch in the profile.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        h = self.lin(x)
        return torch.cond(h.sum() > 0, lambda t: torch.relu(t), lambda t: torch.tanh(t), (h,))  # expect: CG701


def setup(device):
    torch.manual_seed(0)
    return {"model": torch.compile(Net().to(device).eval(), mode="reduce-overhead")}  # expect: CG704


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
