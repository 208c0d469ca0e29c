"""An independent eager/replay measurement for checking `cgtool bench` (shares no code with cgtool).

Own loop: CUDA events around 15 blocks of back-to-back calls, median. Triton: do_bench for eager and
do_bench_cudagraph for replay, where triton is installed.
"""

from __future__ import annotations

import importlib.util
import statistics


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

    def block_us(f, n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        for _ in range(n):
            f()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3 / n

    eager, replay = [], []
    for _ in range(15):
        eager.append(block_us(fn, 20))
        replay.append(block_us(g.replay, 100))
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


def same_process(path: str, rounds: int = 3) -> dict:
    """cgtool's bench path (bench_one, as its worker runs it) and the independent loop, taking turns in
    one process, so process-to-process noise of a launch-bound eager step does not enter the comparison."""
    import sys

    sys.path.insert(0, __file__.rsplit("/tools/", 1)[0])
    from cgtool.bench.run import bench_one
    from cgtool.script import load_script
    from cgtool.worker import Progress

    script = load_script(path)
    settings = {"warmup": 3, "budget_s": 10.0, "target": 0.01}
    ours, ref = [], []
    for _ in range(rounds):
        r = bench_one(script, None, settings, Progress(None))
        ours.append((r.speedup_gpu.point, r.speedup_wall.point))
        ref.append(reference(path)["loop_speedup"])
    return {"cgtool_gpu": statistics.median(o[0] for o in ours), "cgtool_wall": statistics.median(o[1] for o in ours),
            "reference": statistics.median(ref), "runs": {"cgtool": ours, "reference": ref}}
