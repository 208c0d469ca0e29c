"""What a captured graph costs in GPU memory, from the caching allocator's own accounting (no torch here).

A graph's private pool is the set of allocator segments whose `segment_pool_id` is the graph's pool id
(`CUDAGraph.pool()`); `pool_from_segments` reads it from `torch.cuda.memory_snapshot()`'s segment dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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
class GraphMemory:
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
    alloc_trace: Trace | None = None

    @property
    def recipe_extra(self) -> int | None:
        """Bytes the recipe's pool holds beyond cgtool's (warmup and capture on one stream)."""
        return None if self.recipe_pool_reserved is None else self.recipe_pool_reserved - self.pool_reserved

    def to_json(self) -> dict[str, Any]:
        return {"pool_reserved": self.pool_reserved, "pool_allocated": self.pool_allocated,
                "static_input_bytes": self.static_input_bytes, "static_output_bytes": self.static_output_bytes,
                "capture_peak_bytes": self.capture_peak_bytes, "recipe_pool_reserved": self.recipe_pool_reserved,
                **({"alloc_trace": trace_to_json(self.alloc_trace)} if self.alloc_trace is not None else {})}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GraphMemory:
        peak, recipe = d.get("capture_peak_bytes"), d.get("recipe_pool_reserved")
        return cls(int(d["pool_reserved"]), int(d["pool_allocated"]), int(d.get("static_input_bytes", 0)),
                   int(d.get("static_output_bytes", 0)), None if peak is None else int(peak),
                   None if recipe is None else int(recipe),
                   trace_from_json(d["alloc_trace"]) if d.get("alloc_trace") is not None else None)


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
class SharedPool:
    """Every size of a sweep captured again into one pool, largest first (as vLLM and SGLang do)."""

    sizes: tuple[int, ...]  # in capture order
    pool_reserved: int
    pool_allocated: int
    capture_ms: float  # all captures together
    separate_reserved: int  # the sum of the sizes' own pools, for contrast

    def to_json(self) -> dict[str, Any]:
        return {"sizes": list(self.sizes), "pool_reserved": self.pool_reserved, "pool_allocated": self.pool_allocated,
                "capture_ms": self.capture_ms, "separate_reserved": self.separate_reserved}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SharedPool:
        return cls(tuple(int(s) for s in d["sizes"]), int(d["pool_reserved"]), int(d["pool_allocated"]),
                   float(d["capture_ms"]), int(d["separate_reserved"]))


__all__ = ["Event", "GraphMemory", "SharedPool", "Trace", "pool_from_segments", "trace_from_json", "trace_to_json"]
