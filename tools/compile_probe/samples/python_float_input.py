"""A Python float argument that changes every iteration (a schedule value passed into the model).

What torch should report (to be confirmed by the probe; dynamo's specialize_float=False in 2.11/2.13):
- dynamo: the 1st call specializes on the value; the 2nd (different) value recompiles with the float
  as a dynamic input (recompiles log, seen on 2.13 CPU: "triggered by the following guard failure(s):
  - 0/0: scale == 1.0"), then no more recompiles. The float then reaches inductor either as a
  0-dim CPU tensor (tensorified scalar) or as a SymFloat: the probe's symint_keys[].input_types
  and compiled_graphs[] say which.
- cudagraphs: if inductor gets a non-Tensor input, the compile-time fail reason is "non-Tensor
  inputs"; with graph_partition=True (default) cudagraph_partition_post_compile drops fail reasons
  silently (no log, no counter); with graph_partition=False a WARNING
  "skipping cudagraphs due to ['non-Tensor inputs']" and cudagraph_skips += 1.
  If it is a CPU scalar tensor, expect a partition ("cpu ops") or "cpu device" instead.
- seen on 2.13 CPU (aot_graphs log): the recompiled graph takes the float as `primals_4: "f64[][]cpu"`,
  a 0-dim float64 CPU tensor (tensorified Python scalar), converted in-graph with
  prims.convert_element_type. On CUDA that is a CPU scalar tensor feeding a GPU kernel: expect either a
  partition / "cpu device" skip, or a graph that reads the scalar at replay. A graph that baked the
  value would be wrong, so the step returns a correctness check: `ratio` (compiled / eager-without-scale)
  must equal `expected` (the scale) in every iteration; a stale value shows up as ratio != expected.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x, scale: float):
        return torch.relu(self.lin(x)) * scale


def setup(device):
    torch.manual_seed(0)
    net = Net().to(device).eval()
    return {"model": torch.compile(net, mode="reduce-overhead"), "raw": net}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device), "scale": 1.0 + 0.01 * i}


@torch.no_grad()
def step(model, raw, x, scale):
    y = model(x, scale)
    base = torch.relu(raw.lin(x))  # eager, without the scale
    return {"y": y, "ratio": y.sum() / base.sum(), "expected": torch.tensor(scale)}
