"""Plain PyTorch (no cgtool) truth for issue 22: capture a script's step with torch.cuda.graph, then profile
REPLAYS replays with torch.profiler and time them with CUDA events.

    python3 tests/gpu/node_truth.py SCRIPT     # one JSON line: kernels per replay, busy GPU µs per replay, ...

"busy_us": median over the replays of the summed durations of each replay's kernel, memcpy and memset events
(events grouped by the correlation id of their cudaGraphLaunch); "event_us": median µs of one replay between
CUDA events; "events_per_replay": the counts. Compared with cgtool's report.json `node_lines`.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "realworld"))
from truth import as_args, load  # noqa: E402  (plain PyTorch helpers, no cgtool)

REPLAYS, WARMUP = 5, 3
CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def main(path: str) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    dev = torch.device("cuda")
    mod = load(os.path.abspath(path))
    sa, sk = as_args(mod.setup(dev)) if hasattr(mod, "setup") else ((), {})
    get = (lambda i: as_args(mod.inputs(i, dev))) if hasattr(mod, "inputs") else (lambda i: ((), {}))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(WARMUP):
            ia, ik = get(i)
            mod.step(*sa, *ia, **sk, **ik)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    ia, ik = get(WARMUP)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        mod.step(*sa, *ia, **sk, **ik)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(REPLAYS):
            g.replay()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        prof.export_chrome_trace(os.path.join(d, "t.json"))
        with open(os.path.join(d, "t.json")) as fh:
            events = json.load(fh)["traceEvents"]
    launches = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "GraphLaunch" in e.get("name", "") and "correlation" in e.get("args", {})}
    per: dict = {}
    for e in events:
        if e.get("cat") in CATS and (e.get("args") or {}).get("correlation") in launches:
            per.setdefault(e["args"]["correlation"], []).append(float(e.get("dur", 0)))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return {"script": path, "replays": len(per), "events_per_replay": [len(v) for v in per.values()],
            "busy_us": statistics.median(sum(v) for v in per.values()) if per else None,
            "event_us": statistics.median(times)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
