"""An output kept across iterations and read after a later call reused its memory.

Each step keeps the output and, after the next call, compares the new output with the kept one.
What torch should report (2.11 and 2.13, inference under no_grad):
- iteration 1 (reads the warmup output after the recording call) and iteration 2 (reads the
  recording's output after the first replay): RuntimeError raised by the storage access:
  "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run.
   Stack trace: File \".../output_overwritten.py\", line N, in forward ... To prevent overwriting,
   clone the tensor outside of torch.compile() or call torch.compiler.cudagraph_mark_step_begin()
   before each model invocation."  (CUDAGraphTreeManager.format_dealloc_msg; 2.13 has a separate text
   for gradients: "Error: accessing gradient tensor output of CUDAGraphs ...").
  The tree sets these messages only when it ends a warmup or a recording path
  (dealloc_current_path_weakrefs).
- from iteration 3 on (replay after replay): NO error. The kept output is the same memory as the
  new output, so `delta_vs_prev` is exactly 0.0 although the inputs differ: silent overwrite.
- no skip record; 1 CUDAGraphNode.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32
_prev = [None]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return torch.tanh(self.lin(x))


def setup(device):
    torch.manual_seed(0)
    return {"model": torch.compile(Net().to(device).eval(), mode="reduce-overhead")}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    y = model(x)
    prev, _prev[0] = _prev[0], y
    if prev is None:
        return {"y": y}
    delta = (y - prev).abs().max()  # expect: CG703  (raises if prev's storage was invalidated by the tree)
    return {"y": y, "delta_vs_prev": delta}
