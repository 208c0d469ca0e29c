"""Read a graph's memory on the GPU: its private pool from the allocator snapshot, and tensor bytes.

torch.cuda.graph() empties the allocator's cache before capture, so the change of memory_reserved()
around a capture is the pool minus the cache it released (2 MiB for a 34 MiB pool, or below zero):
the pool's own segments are the figure to read.
"""

from __future__ import annotations

from typing import Any

from cgtool.model.graph_memory import pool_from_segments


def pool_memory(pool_id: Any) -> tuple[int, int]:
    """(reserved, allocated) bytes of the private pool `pool_id` (a graph's `pool()`, or a trees pool)."""
    import torch

    try:
        segments = torch.cuda.memory_snapshot(include_traces=False)
    except TypeError:  # a torch whose memory_snapshot takes no include_traces
        segments = torch.cuda.memory_snapshot()
    return pool_from_segments(segments, tuple(pool_id))


def tensor_bytes(value: Any) -> int:
    """Bytes of the distinct storages of the tensors in `value` (nested tuples, lists, dicts, Args)."""
    import torch

    seen: dict[int, int] = {}

    def walk(v: Any, depth: int = 0) -> None:
        if depth > 20:
            return
        if isinstance(v, torch.Tensor):
            if v.is_cuda:
                st = v.untyped_storage()
                seen[st.data_ptr()] = st.nbytes()
        elif isinstance(v, dict):
            for x in v.values():
                walk(x, depth + 1)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x, depth + 1)
        elif hasattr(v, "args") and hasattr(v, "kwargs"):  # cgtool's Args
            walk(tuple(v.args), depth + 1)
            walk(dict(v.kwargs), depth + 1)
        elif hasattr(v, "to_tuple") and callable(v.to_tuple):  # transformers' ModelOutput
            walk(v.to_tuple(), depth + 1)

    walk(value)
    return sum(seen.values())


def recipe_pool(captured: Any) -> int | None:
    """The pool the step holds when captured as PyTorch's docs show it: after warmup on a side stream (cgtool's
    warmup ran on `captured.stream`), torch.cuda.graph(g) on its own capture stream. cuBLAS keeps a workspace per
    (handle, stream) and makes it on a stream's first matmul, so the capture makes it inside the pool. Captured
    once more from the capture's static inputs (the Python side of the state and the CUDA RNG state put back
    after), then freed (the workspace stays with cuBLAS). None when the capture fails or the step has none."""
    import torch

    from cgtool.capture.host_state import SavedState

    saved = SavedState.of(captured.state, pairs=[])  # a capture moves no tensor's value: the Python side and the RNG
    graph = torch.cuda.CUDAGraph()
    try:
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):  # the recipe: its own (default) capture stream
            out = captured.session.call(captured.static_inputs)
        torch.cuda.synchronize()
        reserved, _ = pool_memory(graph.pool())
        del out
    except Exception:  # noqa: BLE001 - the figure is extra; cgtool's own capture stands
        return None
    finally:
        saved.restore()
    del graph
    torch.cuda.empty_cache()
    return reserved


class AllocationTrace:
    """Records the allocations and frees of the CUDA caching allocator while in use (`with AllocationTrace(stream)
    as t:`), as cgtool/bench/pool_model.py reads them: `t.trace` afterwards, None where torch cannot record.
    Uses torch.cuda.memory._record_memory_history without stacks (cheap); it replaces a recording the script
    made itself, and stops it after."""

    def __init__(self, stream: Any) -> None:
        self.stream = int(getattr(stream, "cuda_stream", 0))
        self.trace: tuple[tuple[int, int, int], ...] | None = None
        self._on = False

    def __enter__(self) -> AllocationTrace:
        import torch

        try:  # a fresh history (clear_history): entries of an earlier recording would read as this capture's
            torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", clear_history=True)
            self._on = True
        except Exception:  # noqa: BLE001 - a torch without allocator history (or without clear_history): no trace
            self._on = False
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        if not self._on:
            return
        try:
            entries = torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()]
            self.trace = trace_events(entries, self.stream)
        except Exception:  # noqa: BLE001
            self.trace = None
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)


def trace_events(entries: Any, capture_stream: int) -> tuple[tuple[int, int, int], ...]:
    """(block, bytes, stream) per allocation, (block, 0, stream) per completed free of a block allocated in the
    window; blocks numbered in allocation order, streams numbered from 0 (the capture stream) in order of use."""
    blocks: dict[int, tuple[int, int]] = {}  # address -> (block, stream)
    streams = {capture_stream: 0}
    out: list[tuple[int, int, int]] = []
    count = 0
    for e in entries:
        action, addr = e.get("action"), int(e.get("addr", 0))
        if action == "alloc":
            stream = streams.setdefault(int(e.get("stream", 0)), len(streams))
            blocks[addr] = (count, stream)
            out.append((count, max(int(e.get("size", 0)), 1), stream))
            count += 1
        elif action == "free_completed" and addr in blocks:
            block, stream = blocks.pop(addr)
            out.append((block, 0, stream))
    return tuple(out)
