"""Plain PyTorch, no cgtool: the truth for "a line slower in replay than eager" (issue 36). Prints one JSON line.

  python3 tests/gpu/slower_truth.py SCRIPT [BENCHMARK]

Warmup on a side stream, capture on it (cgtool's way), then torch.profiler over 5 replays and over one eager step
(after one unprofiled): each side's kernels with their GPU time (replays: the median per kernel position). Kernels
whose names only one side has are the path the code took differently; `only_eager` and `only_replay` list them
with their µs, `conv` the convolution kernels of each side (and `conv_eager_us`, `conv_replay_us` their sums). BENCHMARK=1 sets
torch.backends.cudnn.benchmark (for contrast)."""

import importlib.util
import json
import statistics
import sys
from collections import Counter

import torch
from torch.profiler import ProfilerActivity, profile


def load(path):
    spec = importlib.util.spec_from_file_location("script_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernels(prof):
    """(name, µs) of the trace's kernels in GPU start order (the chrome trace, as cgtool reads it too)."""
    import os
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        data = json.load(f)
    os.unlink(path)
    events = data["traceEvents"] if isinstance(data, dict) else data
    ks = sorted((e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"), key=lambda e: float(e["ts"]))
    return [(e["name"], float(e.get("dur", 0))) for e in ks]


def _conv(name):
    """A convolution's kernels: cuDNN's implicit-GEMM fprop, cutlass fprop, FFT/winograd convs and the layout
    transforms cuDNN runs around them."""
    low = name.lower()
    return any(t in low for t in ("conv", "fprop", "nchwtonhwc", "nhwctonchw", "winograd", "fft"))


def main():
    mod = load(sys.argv[1])
    torch.backends.cudnn.benchmark = len(sys.argv) > 2 and sys.argv[2] == "1"
    device = torch.device("cuda")
    state = mod.setup(device)
    run = lambda inp: mod.step(**state, **inp)  # noqa: E731
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):
            run(mod.inputs(i, device))
    torch.cuda.synchronize()
    static = mod.inputs(3, device)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        out = run(static)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            g.replay()
        torch.cuda.synchronize()
    rep = kernels(p)
    per = len(rep) // 5
    replay = [(rep[k][0], statistics.median(rep[k + r * per][1] for r in range(5))) for k in range(per)]
    with torch.cuda.stream(stream):
        expect = run(static)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            expect = run(static)
            torch.cuda.synchronize()
    eager = kernels(p)
    ce, cr = Counter(n for n, _ in eager), Counter(n for n, _ in replay)
    only_e = [(n, us) for n, us in eager if n not in cr]
    only_r = [(n, us) for n, us in replay if n not in ce]
    conv = {"eager": [(n, us) for n, us in eager if _conv(n)], "replay": [(n, us) for n, us in replay if _conv(n)]}
    print(json.dumps({"eager_us": sum(us for _, us in eager), "replay_us": sum(us for _, us in replay),
                      "eager_kernels": len(eager), "replay_kernels": len(replay), "only_eager": only_e,
                      "only_replay": only_r, "only_eager_us": sum(us for _, us in only_e),
                      "only_replay_us": sum(us for _, us in only_r), "conv": conv,
                      "conv_eager_us": sum(us for _, us in conv["eager"]),
                      "conv_replay_us": sum(us for _, us in conv["replay"]),
                      "match": bool(torch.allclose(out.float(), expect.float(), atol=1e-3, rtol=1e-3)),
                      "benchmark": torch.backends.cudnn.benchmark}))


if __name__ == "__main__":
    main()
