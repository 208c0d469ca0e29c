"""Clean inference under torch.compile(mode="reduce-overhead"): nothing should stop CUDA Graph Trees.

What torch should report (2.11 and 2.13, default config):
- no `skipping cudagraphs due to ...` record; counters["inductor"]["cudagraph_skips"] == 0.
- cudagraphs logger (TORCH_LOGS=cudagraphs), INFO: "Recording cudagraph tree for graph without symints"
  (2.13 prefixes the compile id: "[0/0] Recording cudagraph tree for graph without symints").
- tree: one function (mode INFERENCE, under no_grad), warmed up on the 1st call, recorded on the 2nd,
  replayed afterwards -> exactly 1 CUDAGraphNode; no re-records.
- profiler, steady state: the model's kernels come from cudaGraphLaunch; the only kernel launched
  individually per call is the copy of the fresh input into the graph's static input buffer.
On CPU: no tree at all (CUDA graphs are CUDA-only); 2.13 bumps cudagraph_skips silently per compiled graph.
"""

import torch
from torch import nn

WIDTH, DEPTH, BATCH = 256, 4, 32


def setup(device):
    torch.manual_seed(0)
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.GELU()]
    model = nn.Sequential(*layers).to(device).eval()
    return {"model": torch.compile(model, mode="reduce-overhead")}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
