"""Plain PyTorch's answer for a distributed sample (no cgtool), as a user would check it under torchrun:

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/gpu/dist_rows_truth.py SAMPLE OUT_DIR [WARMUP [own]]

The sample's own setup/inputs/step (the script contract's functions, called directly): warmup on a side stream,
`torch.cuda.graph` around one step (on the warmup stream; with `own`, on torch.cuda.graph's own stream, as
PyTorch's documented recipe does), then replay against eager from the same starting state on fresh inputs,
comparing each rank's local shards (`DTensor.to_local()`: parameters, gradients, optimizer state, outputs) — no
deep copy of DTensors — and the eager and replay time of 20 steps each (CUDA events). Each rank writes
OUT_DIR/truth.rank<r>.json as it goes (phase, captured, capture_error and its line in the sample, replay_ok,
max_abs, eager_ms, replay_ms, speedup, pid): a rank that hangs leaves its phase behind.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import time
import traceback
from datetime import timedelta

from truth_common import finish, record_error


def call(fn, **available):
    names = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in available.items() if k in names})


def local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def state_tensors(state: dict) -> list[tuple[str, object]]:
    """Local tensors of the state: module parameters, buffers and gradients, optimizer state, plain tensors."""
    import torch

    out = []
    for key, v in state.items():
        if isinstance(v, torch.nn.Module):
            for n, p in list(v.named_parameters()) + list(v.named_buffers()):
                out.append((f"{key}.{n}", local(p).detach()))
                if getattr(p, "grad", None) is not None:
                    out.append((f"{key}.{n}.grad", local(p.grad).detach()))
        elif isinstance(v, torch.optim.Optimizer):
            for i, st in enumerate(v.state.values()):
                out += [(f"{key}.state[{i}].{k}", local(t).detach()) for k, t in st.items() if isinstance(t, torch.Tensor)]
        elif isinstance(v, torch.Tensor):
            out.append((key, local(v).detach()))
    return out


def outputs(value, captured: bool = False) -> list:
    """Local clones of the output tensors. The captured output may be an AsyncCollectiveTensor whose wait was never
    captured: after a replay, read its buffer (`.elem`); waiting on it fails with `CUDA error: invalid argument`."""
    import torch

    if isinstance(value, torch.Tensor):
        if captured and type(value).__name__ == "AsyncCollectiveTensor" and not value.completed:
            return [value.elem.detach().clone()]
        return [local(value).detach().clone()]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in outputs(v, captured)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in outputs(v, captured)]
    return []


def main() -> None:
    import torch
    import torch.distributed as dist

    sample, out_dir = sys.argv[1], sys.argv[2]
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    own_stream = len(sys.argv) > 4 and sys.argv[4] == "own"
    os.makedirs(out_dir, exist_ok=True)
    rank, world, local_rank = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    res: dict = {"rank": rank, "pid": os.getpid(), "sample": os.path.basename(sample), "phase": "start",
                 "capture_stream": "own" if own_stream else "warmup"}
    path = os.path.join(out_dir, f"truth.rank{rank}.json")

    def save(phase: str | None = None) -> None:
        if phase:
            res["phase"] = phase
        with open(path, "w") as fh:
            json.dump(res, fh, indent=1, default=str)

    save()
    t0 = time.time()
    try:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", timeout=timedelta(seconds=60))
        spec = importlib.util.spec_from_file_location("sample", sample)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        dev = torch.device("cuda")
        ids = dict(device=dev, rank=rank, world_size=world)
        state = call(mod.setup, **ids)

        def inputs(i: int) -> dict:
            return call(mod.inputs, i=i, **ids) if hasattr(mod, "inputs") else {}

        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        save("warmup")
        with torch.cuda.stream(s):
            for i in range(warmup):
                mod.step(**state, **inputs(i))
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        static = inputs(warmup)
        g = torch.cuda.CUDAGraph()
        save("capture")
        try:
            with torch.cuda.graph(g, **({} if own_stream else {"stream": s})):
                static_out = mod.step(**state, **static)
            res["captured"] = True
        except Exception as exc:  # noqa: BLE001
            res["captured"] = False
            res["capture_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            tb = traceback.extract_tb(exc.__traceback__)
            res["capture_line"] = next((f.lineno for f in reversed(tb)
                                        if os.path.abspath(f.filename) == os.path.abspath(sample)), None)
            res["t_s"] = round(time.time() - t0, 2)
            save("capture-failed")
            os._exit(1)
        save("replay-check")
        tensors = state_tensors(state)
        start = [t.clone() for _, t in tensors]
        fresh = inputs(warmup + 1)

        def restore() -> None:
            with torch.no_grad():
                for (_, t), t0_ in zip(tensors, start):
                    t.copy_(t0_)
                for k, v in static.items():
                    if isinstance(v, torch.Tensor):
                        v.copy_(fresh[k])
            torch.cuda.synchronize()

        restore()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            eager_out = outputs(mod.step(**state, **static))
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        eager_state = [t.clone() for _, t in tensors]
        restore()
        g.replay()
        torch.cuda.synchronize()
        res["unwaited_output"] = type(static_out).__name__ == "AsyncCollectiveTensor" and not static_out.completed
        replay_out = outputs(static_out, captured=True)
        diffs = [("output", e, r) for e, r in zip(eager_out, replay_out)] + [
            (n, e, t) for (n, t), e in zip(tensors, eager_state)]
        worst = max(((float((e.double() - r.double()).abs().max()) if e.numel() else 0.0), n) for n, e, r in diffs)
        res["compared"] = len(diffs)
        res["max_abs"], res["worst"] = worst
        res["replay_ok"] = all(torch.allclose(e.double(), r.double(), rtol=1e-4, atol=1e-5) for _, e, r in diffs)
        save("timing")

        def timed(fn, n: int = 20) -> float:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(s):
                a.record(s)
                for _ in range(n):
                    fn()
                b.record(s)
            torch.cuda.synchronize()
            return a.elapsed_time(b) / n

        timed(g.replay, 3)
        res["eager_ms"] = timed(lambda: mod.step(**state, **static))
        res["replay_ms"] = timed(g.replay)
        res["speedup"] = res["eager_ms"] / res["replay_ms"] if res["replay_ms"] > 0 else None
        save("done")
    except Exception:  # noqa: BLE001
        record_error(res)
    finish(res, t0, save)


if __name__ == "__main__":
    main()
