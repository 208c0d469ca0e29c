"""The analysis overhead on the GPU, on samples/deep_1000.py, through cgtool's own GPU tracing (run in its own
process by tests/gpu/test_overhead_gpu.py: `python tests/gpu/overhead.py [SCRIPT]` prints one JSON line).

Alternates untraced and traced eager iterations (warm, on a side stream) and reports the added time
per traced iteration as a multiple of one eager iteration, plus the fixed costs (tracer start, checks).
Writes a cProfile of one traced iteration to $OUT/trace_profile.txt.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def measure(path: str, rounds: int = 7) -> dict:
    import torch

    from cgtool.pipeline.gpu_analysis import GpuAnalysis
    from cgtool.script.contract import load_script

    script = load_script(path)
    dev = torch.device("cuda")
    state = script.call_setup(dev)
    inputs = script.call_inputs(0, dev)
    side = torch.cuda.Stream()

    def one() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        script.call_step(state, inputs)
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    with torch.cuda.stream(side):
        for _ in range(3):
            one()
        t0 = time.perf_counter()
        analysis = GpuAnalysis()
        eager, traced = [], []
        with analysis.tracing():
            start_s = time.perf_counter() - t0
            for i in range(rounds):
                eager.append(one())  # outside an iteration the tracer's modes are not installed
                with analysis.iteration(i, inputs):
                    traced.append(one())
            prof = cProfile.Profile()
            with analysis.iteration(rounds, inputs):
                prof.enable()
                script.call_step(state, inputs)
                prof.disable()
        t1 = time.perf_counter()
        findings = analysis.findings()
        checks_s = time.perf_counter() - t1
    ops = sum(len(it.ops) for it in analysis.tracer.trace.iterations) / (rounds + 1)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
    out_dir = os.environ.get("OUT")
    if out_dir:
        with open(os.path.join(out_dir, "trace_profile.txt"), "w") as fh:
            fh.write(buf.getvalue())
    e, t = statistics.median(eager), statistics.median(traced)
    return {"eager_ms": e * 1e3, "traced_ms": t * 1e3, "added_x": (t - e) / e, "ops_per_iter": ops,
            "us_per_op_added": (t - e) * 1e6 / max(ops, 1), "tracer_start_s": start_s, "checks_s": checks_s,
            "findings": len(findings), "tracer_error": analysis.tracer.trace.tracer_error}


if __name__ == "__main__":
    import json

    print(json.dumps(measure(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "samples", "deep_1000.py")),
                     default=str))
