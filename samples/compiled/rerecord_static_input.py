"""A parameter's storage is swapped every step (three weight sets in rotation, as in an ensemble/EMA swap).

Parameters are static inputs of the compiled graph; the tree records their data pointers. What torch
should report (2.11 and 2.13):
- no skip, cudagraph_skips == 0.
- DEBUG on torch._inductor.cudagraph_trees.__cudagraphs, once per new pointer:
  2.11: "[%s] Re-recording function=%s, reason=%s"; 2.13: "[%s] Re-recording function=%s, mode=%s,
  reason=%s"; reason = "static input data pointer changed.\ninput name: <placeholder>. data pointer
  changed from A to B. input stack trace: ...".
- the DEBUG "Re-recording" record is emitted for every root whose check fails *before* a matching root
  is found (CUDAGraphTreeManager._run loops over the roots), so it also appears on calls that then
  replay an existing graph: count recordings from the tree (or the "Recording function=" DEBUG
  records), not from "Re-recording" records.
- tree: the function gets one root CUDAGraphNode per weight set (3), then every call finds a matching
  root (check_invariants) and replays.
- tree_manager.num_rerecord: 2.11 counts StaticInputIdxMismatch as unexpected -> {None: {fid: 2}}, but
  the limit is bypassed while inline_inbuilt_nn_modules=True (exceed_rerecord_limit returns False);
  2.13 does not count StaticInputIdxMismatch -> stays empty.
- pool memory: one set of outputs per recording.
- the step returns `err_vs_eager` (compiled vs eager with the current weights): ~0 in every iteration.
"""

import torch
from torch import nn

WIDTH, BATCH = 256, 32


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH)).to(device).eval()
    weight_sets = [model[0].weight.detach().clone() * (1 + 0.1 * j) for j in range(3)]
    return {"model": torch.compile(model, mode="reduce-overhead"), "raw": model, "weights": weight_sets}  # expect: CG704


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device), "i": i}


@torch.no_grad()
def step(model, raw, weights, x, i):
    raw[0].weight.data = weights[i % len(weights)]  # same Parameter object, new storage
    y = model(x)  # expect: CG702  (the call whose static input moved; the compile call is the context)
    # correctness check: a replay of a graph recorded with other weights would give err > 0
    return {"y": y, "err_vs_eager": (y - raw(x)).abs().max()}
