"""What a captured graph costs in GPU memory, from the caching allocator's own accounting (no torch here).

A graph's private pool is the set of allocator segments whose `segment_pool_id` is the graph's pool id
(`CUDAGraph.pool()`); `pool_from_segments` reads it from `torch.cuda.memory_snapshot()`'s segment dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cgtool.model.codec import Record, is_none, meta
# One allocator event of a capture: (block, bytes, stream) for an allocation (bytes as requested, > 0), (block, 0,
# stream) for its free. Blocks are numbered in allocation order from 0; stream 0 is the capture stream.
Event = tuple[int, int, int]
Trace = tuple[Event, ...]


def pool_from_segments(segments: Iterable[dict[str, Any]], pool_id: tuple[int, int]) -> tuple[int, int]:
    """(reserved, allocated) bytes of the segments of one private pool: what the pool holds from the driver,
    and what the graph's live tensors in it use."""
    want = tuple(int(x) for x in pool_id)
    reserved = allocated = 0
    for seg in segments:
        if tuple(int(x) for x in seg.get("segment_pool_id", ()) or ()) != want:
            continue
        reserved += int(seg.get("total_size", 0))
        allocated += int(seg.get("allocated_size", 0))
    return reserved, allocated


@dataclass(frozen=True)
class GraphMemory(Record):
    """One graph's memory, in bytes. `pool_reserved` is what replay keeps held while the graph lives."""

    pool_reserved: int  # segments of the graph's private pool (allocator snapshot)
    pool_allocated: int  # of those, bytes in live tensors (the static output and tensors kept by the step)
    static_input_bytes: int = 0  # the static input buffers cgtool keeps (outside the pool: made before capture)
    static_output_bytes: int = 0  # the static output's tensors (inside the pool when the step made them)
    capture_peak_bytes: int | None = None  # peak of allocated memory during capture, above what was allocated before
    # the pool of the same step captured as PyTorch's docs show it (warmup on a side stream, then torch.cuda.graph
    # on its own capture stream): cuBLAS makes a workspace for a stream it has not seen, inside the pool
    recipe_pool_reserved: int | None = None
    # the allocations and frees the capture made (bench sweeps only: cgtool/bench/pool_model.py predicts a shared
    # pool from them); JSON "alloc_trace": [block, bytes, stream] per allocation, [block] per free
    alloc_trace: Trace | None = field(default=None, metadata=meta(
        omit=is_none, write=lambda t: trace_to_json(t), read=lambda d: None if d is None else trace_from_json(d)))

    @property
    def recipe_extra(self) -> int | None:
        """Bytes the recipe's pool holds beyond cgtool's (warmup and capture on one stream)."""
        return None if self.recipe_pool_reserved is None else self.recipe_pool_reserved - self.pool_reserved


def trace_to_json(trace: Sequence[Event]) -> list[list[int]]:
    """[block, bytes, stream] per allocation, [block] per free (its stream is the allocation's)."""
    return [[b, n, s] if n > 0 else [b] for b, n, s in trace]


def trace_from_json(data: Sequence[Sequence[int]]) -> Trace:
    streams: dict[int, int] = {}
    out: list[Event] = []
    for e in data:
        if len(e) == 3 and int(e[1]) > 0:
            streams[int(e[0])] = int(e[2])
            out.append((int(e[0]), int(e[1]), int(e[2])))
        else:
            out.append((int(e[0]), 0, streams.get(int(e[0]), 0)))
    return tuple(out)


@dataclass(frozen=True)
class SharedPool(Record):
    """Every size of a sweep captured again into one pool, largest first (as vLLM and SGLang do)."""

    sizes: tuple[int, ...]  # in capture order
    pool_reserved: int
    pool_allocated: int
    capture_ms: float  # all captures together
    separate_reserved: int  # the sum of the sizes' own pools, for contrast


__all__ = ["Event", "GraphMemory", "SharedPool", "Trace", "pool_from_segments", "trace_from_json", "trace_to_json"]
