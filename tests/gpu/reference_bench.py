"""An independent eager/replay measurement for checking `cgtool bench` (the truth of tests/gpu/test_bench_gpu.py;
`reference` shares no code with cgtool). Run in its own process:

    python tests/gpu/reference_bench.py reference SCRIPT        # one JSON line
    python tests/gpu/reference_bench.py same-process SCRIPT     # one JSON line

Own loop: CUDA events around 15 blocks of back-to-back calls, median. Triton: do_bench for eager and
do_bench_cudagraph for replay, where triton is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys


def loop_us(f, n: int) -> float:
    """Per-call µs of n back-to-back calls, between two CUDA events on the current stream."""
    import torch

    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    for _ in range(n):
        f()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3 / n


def reference(path: str) -> dict:
    import torch

    spec = importlib.util.spec_from_file_location("ref_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dev = torch.device("cuda")
    state = mod.setup(dev)
    inp = mod.inputs(0, dev)

    def fn():
        return mod.step(**state, **inp)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()

    eager, replay = [], []
    for _ in range(15):
        eager.append(loop_us(fn, 20))
        replay.append(loop_us(g.replay, 100))
    out = {"loop_eager_us": statistics.median(eager), "loop_replay_us": statistics.median(replay)}
    out["loop_speedup"] = out["loop_eager_us"] / out["loop_replay_us"]
    try:
        from triton.testing import do_bench, do_bench_cudagraph

        te = do_bench(fn, warmup=100, rep=1000, return_mode="median")
        tr = do_bench_cudagraph(fn, rep=1000, return_mode="median")
        out.update(triton_eager_us=te * 1e3, triton_replay_us=tr * 1e3, triton_speedup=te / tr)
    except Exception as exc:  # triton missing or its API changed
        out["triton_error"] = f"{type(exc).__name__}: {exc}"
    return out


def same_process(path: str, turns: int = 15) -> dict:
    """cgtool's measurement (bench.run.measure, as its worker runs it) and an independent event loop
    (own code, above) taking turns on the same captured step in one process, so drift and the state of
    the process hit both alike. Per turn: cgtool's headline speedup (blocks on a slowed CPU left out),
    cgtool's speedup over every block, the loop's, and the share of cgtool's blocks the CPU probe found slowed."""
    import torch

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from cgtool.bench.measure import measure, prepare
    from cgtool.bench.result import BenchResult
    from cgtool.model.phase_log import PhaseLog
    from cgtool.script.contract import load_script

    script = load_script(path)
    from cgtool.model.job import MeasureSettings

    settings = MeasureSettings(warmup=3, budget_s=0.4, min_time_s=0.0, target=0.01)  # short turns: same conditions
    torch.cuda.init()
    prep = prepare(script, None, settings, PhaseLog())
    eager_fn, replay_fn = prep.fns["eager"], prep.fns["replay"]

    rows = []
    with torch.cuda.stream(prep.stream):
        for _ in range(turns):
            rounds = measure(prep, settings, PhaseLog())
            r = BenchResult.from_rounds(rounds, script=path, entry="step")
            every = statistics.median(rounds.samples["eager"]["gpu"]) / statistics.median(rounds.samples["replay"]["gpu"])
            e = [loop_us(eager_fn, 20) for _ in range(5)]
            rp = [loop_us(replay_fn, 100) for _ in range(5)]
            slowed = r.cpu_load.slowed_fraction if r.cpu_load else 0.0
            rows.append({"headline": r.speedup_gpu.point, "every_block": every,
                         "loop": statistics.median(e) / statistics.median(rp), "slowed": slowed})
    quiet = [t for t in rows if t["slowed"] == 0]
    med = lambda key, ts: statistics.median(t[key] for t in ts) if ts else float("nan")  # noqa: E731
    return {"every_block": med("every_block", rows), "loop": med("loop", rows),
            "quiet_turns": len(quiet), "quiet_headline": med("headline", quiet), "quiet_loop": med("loop", quiet),
            "turns": [{k: round(v, 3) for k, v in t.items()} for t in rows]}


if __name__ == "__main__":
    what, script_path = sys.argv[1], sys.argv[2]
    print(json.dumps(reference(script_path) if what == "reference" else same_process(script_path)))
