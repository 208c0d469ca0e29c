"""An op CUDA graphs cannot capture, kept inside the compiled graph: .item() with capture_scalar_outputs.

torch._dynamo.config.capture_scalar_outputs=True makes dynamo trace `.item()` as
aten._local_scalar_dense (an unbacked SymInt) instead of breaking the graph.
aten._local_scalar_dense is in FORBIDDEN_CUDAGRAPH_OPS (torch/_inductor/utils.py).
What torch should report:
- default config (graph_partition=True): no warning-level skip; the graph is partitioned around the
  unsafe node (DEBUG on torch._inductor.scheduler.__cudagraphs: "... reason=unbacked binding ops" or
  "reason=CUDAGraph-unsafe custom ops"), counters["inductor"]["cudagraph_partitions"] >= 2; the
  GPU partitions are recorded and replayed, the .item() sync and what depends on it run eagerly.
- graph_partition=False ("nopartition"): WARNING "skipping cudagraphs due to disabling cudagraphs due
  to incompatible op aten._local_scalar_dense.default Found from File \".../incompatible_op_item.py\",
  line N, in forward ..." (compile_fx.py get_first_incompatible_cudagraph_node), cudagraph_skips == 1,
  0 CUDAGraphNodes.
"""

import torch
from torch import nn

torch._dynamo.config.capture_scalar_outputs = True

WIDTH, BATCH = 256, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        k = (x > 0).sum().item()  # host sync; an unbacked SymInt in the graph
        return torch.relu(self.lin(x)) + k


def setup(device):
    torch.manual_seed(0)
    return {"model": torch.compile(Net().to(device).eval(), mode="reduce-overhead")}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
