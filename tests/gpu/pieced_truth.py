"""Plain PyTorch's truth for judging a pieced step (cgtool capture --piecewise) over K steps: is a difference between
the step compiled with backend="cudagraphs" and eager the CUDA graphs, or torch.compile's own kernels?

`python tests/gpu/pieced_truth.py SAMPLE [K]`: setup, 3 eager warmup steps on a side stream, then the state deep-copied
once per way — eager, eager again, torch.compile(step, backend="aot_eager") (the compiled step, no CUDA graphs) and
torch.compile(step, backend="cudagraphs") (the same compiled graphs recorded as CUDA graphs) — and K steps of each on
inputs(3)..inputs(3+K-1). Prints one `TRUTH {json}` line: per pair of ways, the largest difference of the outputs and
of every state tensor after each step, and the first step at which they differ.
"""

from __future__ import annotations

import copy
import json
import sys

import torch
from truth_common import load, side_stream_warmup, tensors_of

WAYS = ("eager", "eager_again", "aot_eager", "cudagraphs")
PAIRS = (("eager", "eager_again"), ("eager", "aot_eager"), ("eager", "cudagraphs"), ("aot_eager", "cudagraphs"))


def flat(out: object) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out.detach().clone()]
    if isinstance(out, dict):
        return [t for v in out.values() for t in flat(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in flat(v)]
    return []


def run(mod, base: dict, way: str, k: int, device) -> list[list[torch.Tensor]]:  # noqa: ANN001
    """K steps from a copy of `base`; after each, the outputs and every state tensor (cloned)."""
    torch._dynamo.reset()
    state = copy.deepcopy(base)
    step = mod.step if way.startswith("eager") else torch.compile(mod.step, backend=way)
    seen = []
    for i in range(k):
        inputs = mod.inputs(3 + i, device) if hasattr(mod, "inputs") else {}
        if way == "cudagraphs":
            torch.compiler.cudagraph_mark_step_begin()
        out = step(**state, **inputs)
        torch.cuda.synchronize()
        seen.append(flat(out) + [t.detach().clone() for t in tensors_of(state).values()])
    return seen


def diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    worst = 0.0
    for x, y in zip(a, b):
        if x.is_floating_point() or x.is_complex():
            worst = max(worst, (x.double() - y.double()).abs().max().item() if x.numel() else 0.0)
        elif not torch.equal(x, y):
            worst = float("inf")
    return worst


def main() -> None:
    path, k = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 6
    device = torch.device("cuda")
    mod = load(path)
    base = mod.setup(device)
    side_stream_warmup(mod, base, device)
    runs = {way: run(mod, base, way, k, device) for way in WAYS}
    res = {"sample": path, "steps": k}
    for a, b in PAIRS:
        per_step = [diff(x, y) for x, y in zip(runs[a], runs[b])]
        first = next((i + 1 for i, d in enumerate(per_step) if d > 0), None)
        res[f"{a}~{b}"] = {"max_abs_per_step": [float(f"{d:.3g}") for d in per_step], "first_differing_step": first}
    print("TRUTH " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
