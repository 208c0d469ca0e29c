"""Plain PyTorch, no cgtool: the truth for issue 21's memory figures. Prints one JSON line.

  python3 tests/gpu/memory_truth.py pool SCRIPT        one graph as torch.cuda.graph makes it: its private pool
  python3 tests/gpu/memory_truth.py recipe SCRIPT      one graph as PyTorch's docs show it: warmup on a side stream,
      then torch.cuda.graph(g) on its own (default) capture stream: its pool, and the pool's largest live blocks
      (cuBLAS makes a workspace for a stream it has not seen, inside the capture's pool)
  python3 tests/gpu/memory_truth.py compiled SCRIPT    a torch.compile step run to steady state: its private pools
      (with each segment's size and live bytes, and the device's L2 size: inductor's autotuning benchmarks
      with an L2-sized flush buffer, allocated inside the trees' pool when it runs during the warmup call)
  python3 tests/gpu/memory_truth.py sizes SCRIPT HIST N,N,... [S,S,...]   capture the sizes N into one pool on
      one stream, largest first (as vLLM does); pool bytes, and eager and replay time per batch of the histogram
      (JSON file); with sizes S (a sweep's), also eager and replay time at each S (own graph), in the same run

Times: wall time of back-to-back loops; every measured item is timed in turn, round after round, and the least
loop of each is kept (other load on the machine only adds time, and it hits every item alike).
A graph's private pool: memory_snapshot() segments whose segment_pool_id is the graph's pool()."""

import json
import sys
import time

import torch

from truth_common import load


def call(mod, state, inp):
    args, kwargs = [], {}
    for v in (state, inp):
        if isinstance(v, dict):
            kwargs.update(v)
        elif isinstance(v, tuple):
            args += list(v)
        elif v is not None:
            args.append(v)
    return mod.step(*args, **kwargs)


def make_inputs(mod, i, device, size=None):
    if not hasattr(mod, "inputs"):
        return None
    return mod.inputs(i, device) if size is None else mod.inputs(i, device, size=size)


def pool_of(pool_id):
    reserved = allocated = 0
    for seg in torch.cuda.memory_snapshot():
        if tuple(seg.get("segment_pool_id", ())) == tuple(pool_id):
            reserved += seg["total_size"]
            allocated += seg["allocated_size"]
    return reserved, allocated


def capture(mod, state, device, size=None, pool=None, stream=None, capture_stream="warmup"):
    """capture_stream "warmup": capture on the warmup stream (cgtool's way); "own": torch.cuda.graph's own."""
    stream = torch.cuda.Stream() if stream is None else stream
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):
            call(mod, state, make_inputs(mod, i, device, size))
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    static = make_inputs(mod, 3, device, size)
    g = torch.cuda.CUDAGraph()
    before = torch.cuda.memory_reserved()
    with torch.cuda.graph(g, pool=pool, stream=stream if capture_stream == "warmup" else None):
        out = call(mod, state, static)
    torch.cuda.synchronize()
    return g, static, out, torch.cuda.memory_reserved() - before


def loop_us(fn, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def least_loops(items, rounds=7, n=10):
    """{key: least loop time (µs per call)} of every (key, fn), timed in turn round after round."""
    for _key, fn in items:  # warm
        for _ in range(3):
            fn()
    best = {}
    for _ in range(rounds):
        for key, fn in items:
            t = loop_us(fn, n)
            best[key] = min(best.get(key, t), t)
    return best


def main():
    what, path = sys.argv[1], sys.argv[2]
    mod = load(path, "script_under_test")
    device = torch.device("cuda")
    state = mod.setup(device) if hasattr(mod, "setup") else None
    if what == "pool":
        g, _static, _out, delta = capture(mod, state, device)
        reserved, allocated = pool_of(g.pool())
        print(json.dumps({"pool_reserved": reserved, "pool_allocated": allocated, "reserved_delta": delta}))
    elif what == "recipe":
        g, _static, _out, delta = capture(mod, state, device, capture_stream="own")
        reserved, allocated = pool_of(g.pool())
        blocks = sorted((b["size"] for seg in torch.cuda.memory_snapshot()
                         if tuple(seg.get("segment_pool_id", ())) == tuple(g.pool())
                         for b in seg["blocks"] if b["state"] == "active_allocated"), reverse=True)
        print(json.dumps({"pool_reserved": reserved, "pool_allocated": allocated, "reserved_delta": delta,
                          "largest_live_blocks": blocks[:4]}))
    elif what == "compiled":
        for i in range(8):  # trees: warm up, record, then replay
            call(mod, state, make_inputs(mod, i, device))
        torch.cuda.synchronize()
        reserved = allocated = 0
        segments = []
        for seg in torch.cuda.memory_snapshot():
            if tuple(seg.get("segment_pool_id", (0, 0))) != (0, 0):
                reserved += seg["total_size"]
                allocated += seg["allocated_size"]
                segments.append([seg["total_size"], seg["allocated_size"]])
        print(json.dumps({"pool_reserved": reserved, "pool_allocated": allocated, "segments": sorted(segments),
                          "l2_cache_bytes": torch.cuda.get_device_properties(device).L2_cache_size}))
    elif what == "sizes":
        with open(sys.argv[3]) as f:
            hist = {int(b): float(w) for b, w in json.load(f).items()}
        sizes = sorted((int(s) for s in sys.argv[4].split(",")), reverse=True)
        sweep = [int(s) for s in sys.argv[5].split(",")] if len(sys.argv) > 5 else []
        handle, stream = torch.cuda.graph_pool_handle(), torch.cuda.Stream()  # one pool, one stream, as vLLM
        graphs, t0 = {}, time.perf_counter()
        for s in sizes:
            graphs[s] = capture(mod, state, device, s, handle, stream)
        capture_s = time.perf_counter() - t0
        reserved, allocated = pool_of(handle)
        segments = sorted((seg["total_size"] for seg in torch.cuda.memory_snapshot()
                           if tuple(seg.get("segment_pool_id", ())) == tuple(handle)), reverse=True)
        own = {s: capture(mod, state, device, s) for s in sweep}  # each sweep size in its own pool, for timing
        items, batches = [], {}
        for b in sorted(hist):
            inp = make_inputs(mod, 9, device, b)
            c = next((s for s in sorted(sizes) if s >= b), None)
            batches[b] = c
            items.append((("eager", b), lambda inp=inp: call(mod, state, inp)))
            if c is not None:
                items.append((("step", b), graphs[c][0].replay))
        for s in sweep:
            inp = make_inputs(mod, 9, device, s)
            items += [(("sweep_eager", s), lambda inp=inp: call(mod, state, inp)), (("sweep_replay", s), own[s][0].replay)]
        t = least_loops(items)
        rows = [{"batch": b, "weight": hist[b], "captured": c, "eager_us": t[("eager", b)],
                 "step_us": t[("step", b)] if c is not None else t[("eager", b)]} for b, c in batches.items()]
        total = sum(r["weight"] for r in rows)
        eager_mean = sum(r["weight"] * r["eager_us"] for r in rows) / total
        mean = sum(r["weight"] * r["step_us"] for r in rows) / total
        print(json.dumps({"sizes": sizes, "pool_reserved": reserved, "pool_allocated": allocated, "capture_s": capture_s,
                          "segments": segments,
                          "rows": rows, "eager_mean_us": eager_mean, "mean_us": mean, "speedup": eager_mean / mean,
                          "sweep": [{"size": s, "eager_us": t[("sweep_eager", s)], "replay_us": t[("sweep_replay", s)]}
                                    for s in sweep]}))
    else:
        raise SystemExit(f"unknown mode {what!r}")


if __name__ == "__main__":
    main()
