"""The batch size cycles through 10 values: one CUDA graph per distinct size.

Iteration i uses SIZES[i % 10]; with PROBE_ITERATIONS (3 warmup + 20 steady) every size is seen
2-3 times. What torch should report (2.11 and 2.13):
- dynamo: the 1st size compiles a static graph; the 2nd size recompiles with a dynamic batch
  (automatic dynamic shapes; the recompiles log says why: size mismatch at index 0).
- cudagraphs logger, INFO, once per new size of the dynamic graph: "Recording cudagraph tree for
  symint key 16" (2.13: "[0/1] Recording cudagraph tree for symint key %s"), args = (key,).
- once, WARNING, when the dynamic graph reaches 9 distinct sizes (> cudagraph_dynamic_shape_warn_limit=8):
  "CUDAGraph supports dynamic shapes by recording a new graph for each distinct input size. ...
  We have observed 9 distinct sizes. ..."
- tree: each symint key is its own tree function (new FunctionID); each is warmed up on its 1st
  call, recorded on its 2nd -> about 10 CUDAGraphNodes in the end (one more if size 8 keeps hitting
  the static graph besides the dynamic one); no skip, cudagraph_skips == 0.
- pool memory grows with the number of recorded sizes.
"""

import torch
from torch import nn

WIDTH = 256
SIZES = [8, 16, 24, 32, 40, 48, 56, 64, 72, 80]
PROBE_ITERATIONS = {"warmup": 3, "steady": 20}  # read by the compile probe only; cgtool ignores it


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH)).to(device).eval()
    return {"model": torch.compile(model, mode="reduce-overhead")}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(SIZES[i % len(SIZES)], WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)  # expect: CG702  (the call that passes the new size; the compile call is the context)
