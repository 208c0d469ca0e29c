"""An op torch.compile cannot put in its graph with the default config: .item() -> graph break.

With capture_scalar_outputs=False (default) dynamo breaks the graph at `.item()`: two compiled graphs
run with the Python (and the host sync) between them. What torch should report:
- graph_breaks log (INFO/DEBUG on torch._dynamo...__graph_breaks): "Graph break ... Tensor.item ...";
  counters["graph_break"] has one entry.
- graph break: WARNING on torch._dynamo.variables.tensor "Graph break from `Tensor.item()`, consider
  setting: torch._dynamo.config.capture_scalar_outputs = True ..." (seen on 2.13 CPU) and a DEBUG record
  "Graph break in user code at .../graph_break_item.py:25 ..." on torch._dynamo.symbolic_convert.__graph_breaks.
- the resumed frame (torch_dynamo_resume_in_forward_at_25) receives k as an int: it is first
  specialized (guard `___stack0 == <value>`), then recompiled with k dynamic (seen on 2.13 CPU:
  compile ids 0/0, 1/0, 1/1).
- cudagraphs: no skip. The first piece is one tree function, recorded once and replayed. The second
  piece takes k as an int graph input, so the trees key on its value ("symint key"): a new tree
  function per distinct k, i.e. new warmups/recordings as long as k keeps changing (with random
  inputs it changes nearly every step), and the dynamic-shape warning after 8 values.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(WIDTH, WIDTH)
        self.b = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        h = torch.relu(self.a(x))
        k = (h > 0).sum().item()  # graph break here
        return self.b(h) + k


def setup(device):
    torch.manual_seed(0)
    return {"model": torch.compile(Net().to(device).eval(), mode="reduce-overhead")}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
