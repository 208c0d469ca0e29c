"""Chrome traces shaped as torch.profiler writes them, rebuilt from the GPU recordings in tests/data/nodes (each
replay's and the eager step's events with their recorded names, categories, GPU durations, launching ops and those
ops' CPU times; the recordings keep no timestamps, so events are laid out one after another as a stream runs them)."""

from __future__ import annotations

from typing import Any

STREAM = 7
THREAD = 1


def replay_trace(replays: list[list[list[Any]]], gap_us: float = 50.0) -> dict[str, Any]:
    """Replay i: a cudaGraphLaunch (correlation i + 1) on the CPU, then its events back to back on one stream."""
    events: list[dict[str, Any]] = []
    t = 0.0
    for i, replay in enumerate(replays):
        corr = i + 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": t, "dur": 8.0,
                       "pid": 1, "tid": THREAD, "args": {"correlation": corr}})
        t += 10.0
        for name, cat, dur in (tuple(e[:3]) for e in replay):
            events.append({"ph": "X", "cat": cat, "name": name, "ts": t, "dur": dur, "pid": 0, "tid": STREAM,
                           "args": {"correlation": corr, "stream": STREAM, "device": 0}})
            t += dur + 0.5
        t += gap_us
    return {"traceEvents": events}


def eager_trace(kernels: list[list[Any]], cpu_us: list[float]) -> dict[str, Any]:
    """The eager step: outermost aten op k spans cpu_us[k] on the CPU; each kernel (name, cat, µs, op) is launched
    from inside its op and runs on the stream when both the launch and the previous kernel are done."""
    events: list[dict[str, Any]] = []
    starts, t = [], 0.0
    for k, us in enumerate(cpu_us):
        starts.append(t)
        events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{k}", "ts": t, "dur": us, "pid": 1,
                       "tid": THREAD})
        t += us + 1.0
    gpu, launched = 0.0, {}
    for j, (name, cat, dur, op) in enumerate(kernels):
        corr = 1000 + j
        at = starts[op] + min(cpu_us[op] / 2, 1.0 + launched.get(op, 0)) if op >= 0 else t + j
        launched[op] = launched.get(op, 0) + 0.1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": at, "dur": 0.05,
                       "pid": 1, "tid": THREAD, "args": {"correlation": corr}})
        gpu = max(gpu, at + 5.0)
        events.append({"ph": "X", "cat": cat, "name": name, "ts": gpu, "dur": dur, "pid": 0, "tid": STREAM,
                       "args": {"correlation": corr, "stream": STREAM, "device": 0}})
        gpu += dur
    return {"traceEvents": events}
