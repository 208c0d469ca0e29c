"""A shared graph pool predicted from the sweep's own allocations: PyTorch's caching allocator replayed in Python.

bench records, while it captures each size of a sweep, every allocation and free the capture makes in the graph's
private pool (`torch.cuda.memory._record_memory_history`; cgtool/capture/memory.py `AllocationTrace`). Capturing a set
of sizes into one pool, largest first, on one stream (as vLLM and SGLang do) runs those same allocations one capture
after the other in one pool: `shared_pool_bytes` replays them through the allocator's rules and sums the segments it
would reserve. The rules are c10/cuda/CUDACachingAllocator.cpp's (expandable segments off, no max_split_size):

- a request is rounded up to a multiple of 512 bytes (512 at least);
- up to 1 MiB it is served from the pool's small blocks, above from its large blocks, each kept per stream;
- a free block is found best fit: the smallest free block of the same stream and kind that holds the request
  (the lowest address among equal sizes); it is split when the rest is at least 512 bytes (small) or more than
  1 MiB (large), the allocation taking the front;
- with no free block, a new segment: 2 MiB for a small request, 20 MiB for a large one under 10 MiB, else the
  request rounded up to 2 MiB;
- a freed block merges with free neighbours of its segment; a private pool never returns segments while its
  graphs live, and the blocks a graph still holds after its capture (its output, state it keeps) stay taken.

A size the sweep did not measure takes its allocations from the two measured sizes around it when their captures
made the same allocations in the same order (activation sizes are affine in the batch: interpolated exactly);
otherwise from the next measured size above (at least as large). No torch here.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cgtool.model.graph_memory import Event, Trace

MIN_BLOCK = 512  # kMinBlockSize
SMALL_SIZE = 1 << 20  # kSmallSize: requests up to this use the small blocks
SMALL_BUFFER = 2 << 20  # kSmallBuffer: a small segment
LARGE_BUFFER = 20 << 20  # kLargeBuffer: a segment for a large request under MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc
ROUND_LARGE = 2 << 20  # kRoundLarge



def round_size(size: int) -> int:
    return MIN_BLOCK if size < MIN_BLOCK else MIN_BLOCK * ((size + MIN_BLOCK - 1) // MIN_BLOCK)


def segment_size(size: int) -> int:
    """Bytes of the segment a request of `size` (rounded) gets when no free block holds it."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


@dataclass
class _Block:
    addr: int
    size: int
    stream: int
    small: bool
    free: bool = True
    prev: _Block | None = None
    next: _Block | None = None


@dataclass
class PoolSimulator:
    """One private pool: segments, blocks and per (stream, kind) free lists sorted by (size, address)."""

    reserved: int = 0
    segments: list[int] = field(default_factory=list)
    _free: dict[tuple[int, bool], list[tuple[int, int]]] = field(default_factory=dict)
    _by_addr: dict[int, _Block] = field(default_factory=dict)
    _next_addr: int = 0

    def malloc(self, nbytes: int, stream: int) -> _Block:
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        free = self._free.setdefault((stream, small), [])
        i = bisect.bisect_left(free, (size, -1))
        if i < len(free):
            _, addr = free.pop(i)
            block = self._by_addr[addr]
        else:  # a new segment
            seg = segment_size(size)
            block = _Block(self._next_addr, seg, stream, small)
            self._by_addr[block.addr] = block
            self._next_addr += seg + ROUND_LARGE  # segments never adjoin: blocks merge only within one
            self.reserved += seg
            self.segments.append(seg)
        rest = block.size - size
        if (rest >= MIN_BLOCK) if small else (rest > SMALL_SIZE):
            tail = _Block(block.addr + size, rest, stream, small, True, block, block.next)
            if block.next is not None:
                block.next.prev = tail
            block.next, block.size = tail, size
            self._by_addr[tail.addr] = tail
            bisect.insort(free, (tail.size, tail.addr))
        block.free = False
        return block

    def release(self, block: _Block) -> None:
        free = self._free[(block.stream, block.small)]
        del self._by_addr[block.addr]
        for other in (block.prev, block.next):
            if other is None or not other.free:
                continue
            free.pop(bisect.bisect_left(free, (other.size, other.addr)))
            del self._by_addr[other.addr]
            if other is block.prev:
                block.addr, block.prev = other.addr, other.prev
                if other.prev is not None:
                    other.prev.next = block
            else:
                block.next = other.next
                if other.next is not None:
                    other.next.prev = block
            block.size += other.size
        self._by_addr[block.addr] = block
        block.free = True
        bisect.insort(free, (block.size, block.addr))

    def run(self, trace: Trace) -> None:
        """One capture's allocations and frees; blocks it never frees stay taken."""
        live: dict[int, _Block] = {}
        for block, nbytes, stream in trace:
            if nbytes > 0:
                live[block] = self.malloc(nbytes, stream)
            elif block in live:
                self.release(live.pop(block))


def shared_pool_bytes(traces: Iterable[Trace]) -> int:
    """Bytes one pool reserves after capturing `traces` in the order given (largest size first, as served)."""
    pool = PoolSimulator()
    for trace in traces:
        pool.run(trace)
    return pool.reserved


def same_shape(a: Trace, b: Trace) -> bool:
    """The two captures made the same allocations and frees in the same order (sizes aside)."""
    return len(a) == len(b) and all(x[0] == y[0] and x[2] == y[2] and (x[1] > 0) == (y[1] > 0) for x, y in zip(a, b))


def interpolate(a: Trace, size_a: int, b: Trace, size_b: int, size: int) -> Trace:
    """The trace at `size` from two of the same shape at size_a and size_b: each request linear in the size
    (extrapolated outside them), at least 1 byte."""
    t = (size - size_a) / (size_b - size_a)
    return tuple((x[0], max(1, round(x[1] + (y[1] - x[1]) * t)) if x[1] > 0 else 0, x[2]) for x, y in zip(a, b))


@dataclass(frozen=True)
class PoolModel:
    """The measured sizes' capture traces, and the shared pool of any set of sizes from them."""

    traces: Mapping[int, Trace]
    _cache: dict[tuple[int, ...], int] = field(default_factory=dict, compare=False, repr=False)

    def trace(self, size: int) -> tuple[Trace, bool]:
        """(the trace at `size`, exact: measured or interpolated between two captures of the same shape)."""
        if size in self.traces:
            return self.traces[size], True
        measured = sorted(self.traces)
        i = bisect.bisect_left(measured, size)
        if 0 < i < len(measured):
            lo, hi = measured[i - 1], measured[i]
        elif len(measured) >= 2:  # outside: the two nearest measured sizes
            lo, hi = (measured[0], measured[1]) if i == 0 else (measured[-2], measured[-1])
        else:
            return self.traces[measured[0]], False
        a, b = self.traces[lo], self.traces[hi]
        if same_shape(a, b):
            return interpolate(a, lo, b, hi, size), True
        return self.traces[measured[min(i, len(measured) - 1)]], False

    def shared_bytes(self, sizes: Iterable[int]) -> int:
        """Bytes of one pool holding `sizes`, captured largest first on one stream."""
        key = tuple(sorted(set(sizes), reverse=True))
        if key not in self._cache:
            self._cache[key] = shared_pool_bytes(self.trace(s)[0] for s in key)
        return self._cache[key]

    def exact(self, sizes: Iterable[int]) -> bool:
        """Every size's trace measured or interpolated between captures of the same shape."""
        return all(self.trace(s)[1] for s in set(sizes))


__all__ = ["Event", "PoolModel", "PoolSimulator", "Trace", "interpolate", "round_size", "same_shape", "segment_size",
           "shared_pool_bytes"]
