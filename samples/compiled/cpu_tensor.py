"""A CPU tensor computed inside the compiled region (a module buffer left on the CPU).

`torch.cos(self.table)` runs on the CPU inside the graph and its result is copied to the GPU.
What torch should report:
- default config (graph_partition=True in 2.11 and 2.13): NO warning-level skip. Inductor splits the
  graph at the CPU op / device copy: counters["inductor"]["cudagraph_partitions"] >= 2; at DEBUG on
  torch._inductor.scheduler.__cudagraphs: "Created %d graph partitions: %d cudagraphable, %d
  non-cudagraphable", then per node "reason=cpu ops" / "reason=DeviceCopy ops" with fx=... and the
  stack trace lines. The GPU partitions are recorded as separate tree functions; the CPU part and
  the host->device copy run eagerly every call.
- graph_partition=False (probe variant "nopartition"): one WARNING on
  torch._inductor.cudagraph_utils.__cudagraphs, with the prefix doubled because the reason already
  carries it: "skipping cudagraphs due to skipping cudagraphs due to cpu device (<node>). Found from :
  \n File ".../cpu_tensor.py", line N, in forward\n    w = torch.cos(self.table) ...";
  cudagraph_skips == 1; no tree nodes.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)
        self.register_buffer("table", torch.linspace(0, 1, WIDTH))  # stays on the CPU (see setup)

    def forward(self, x):
        w = torch.cos(self.table)
        return torch.relu(self.lin(x)) * w.to(x.device)  # expect: CG701


def setup(device):
    torch.manual_seed(0)
    net = Net()
    net.lin.to(device)  # only the Linear moves; `table` stays a CPU buffer
    return {"model": torch.compile(net.eval(), mode="reduce-overhead")}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
