"""Per-op tracer cost of the GPU code path (virtual_cuda=False), measured on the CPU.

    .venv/bin/python benchmarks/trace_micro.py [--rounds 7] [--profile]

Runs samples/deep_1000.py (1,000 x (addmm, relu, add, t)) on CPU tensors under Tracer(virtual_cuda=False)
with a fake stream probe, alternating untraced and traced iterations; reports the median of each and the
microseconds the tracer adds per recorded op. (On CPU tensors the ops are host ops, so the probe itself is
not called: what remains is the per-op Python work that the GPU run shares.)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from cgtool.trace.tracer import Tracer  # noqa: E402


def load_sample():
    spec = importlib.util.spec_from_file_location("deep_1000", os.path.join(ROOT, "samples", "deep_1000.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--profile", action="store_true", help="cProfile one traced iteration (tottime order)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    mod = load_sample()
    dev = torch.device("cpu")
    state = mod.setup(dev)
    x = mod.inputs(0, dev)["x"]
    for _ in range(2):
        mod.step(state["model"], x)
    tracer = Tracer(virtual_cuda=False, stream_probe=lambda i: (1, False), sync_debug=True)
    tracer.__enter__()
    counter = iter(range(10**9))

    def traced() -> None:
        with tracer.iteration(next(counter), inputs={"x": x}):
            mod.step(state["model"], x)

    if args.profile:
        import cProfile
        import pstats

        traced()
        pr = cProfile.Profile()
        pr.enable()
        traced()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(18)
        return
    traced()
    eager, trace_t = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        mod.step(state["model"], x)
        eager.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        traced()
        trace_t.append(time.perf_counter() - t0)
        tracer.trace.iterations[:-1] = []  # keep memory flat
    ops = len(tracer.trace.iterations[-1].ops)
    tracer.__exit__(None, None, None)
    e, t = statistics.median(eager), statistics.median(trace_t)
    print(f"ops/iteration {ops}  eager {e * 1e3:.2f} ms  traced {t * 1e3:.2f} ms  "
          f"added {(t - e) / ops * 1e6:.2f} us/op  ratio +{(t - e) / e:.2f}x")


if __name__ == "__main__":
    main()
