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
