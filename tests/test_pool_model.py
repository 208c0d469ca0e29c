"""The shared-pool model (cgtool.bench.pool_model): PyTorch's caching-allocator rules replayed over capture traces,
checked against hand-worked cases and, with Hypothesis, against a naive re-implementation that scans every block;
the trace's JSON; the planner pricing its sets with it. Plain numbers, no torch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cgtool.bench.pool_model import PoolModel, interpolate, round_size, same_shape, segment_size, shared_pool_bytes
from cgtool.bench.size_plan import CostModel, SizeCost, evaluate, recommend
from cgtool.model.graph_memory import GraphMemory, trace_from_json, trace_to_json

MiB = 2**20


def test_rounding_and_segment_sizes_follow_the_allocator() -> None:
    assert round_size(1) == 512 and round_size(512) == 512 and round_size(513) == 1024
    assert segment_size(512) == 2 * MiB and segment_size(MiB) == 2 * MiB  # small requests: a 2 MiB segment
    assert segment_size(MiB + 512) == 20 * MiB and segment_size(10 * MiB - 512) == 20 * MiB
    assert segment_size(10 * MiB) == 10 * MiB and segment_size(10 * MiB + 1) == 12 * MiB  # rounded to 2 MiB


def test_a_larger_graph_s_freed_blocks_serve_the_next_capture() -> None:
    big = ((0, 30 * MiB, 0), (1, 5 * MiB, 0), (1, 0, 0))  # 30 MiB kept (the output), a 5 MiB temporary freed
    small = ((0, 3 * MiB, 0), (1, 3 * MiB, 0), (0, 0, 0), (2, 100, 0))
    assert shared_pool_bytes([big]) == 30 * MiB + 20 * MiB  # the temporary's 20 MiB segment stays in the pool
    # the small capture takes both 3 MiB blocks from that free 20 MiB segment; its 100 B needs a small segment
    assert shared_pool_bytes([big, small]) == 52 * MiB
    assert shared_pool_bytes([small]) == 20 * MiB + 2 * MiB


def test_kept_blocks_are_not_reused_and_streams_do_not_share() -> None:
    keep = ((0, 12 * MiB, 0),)
    assert shared_pool_bytes([keep, keep]) == 24 * MiB  # the first graph's output stays taken
    freed = ((0, 12 * MiB, 0), (0, 0, 0))
    assert shared_pool_bytes([freed, freed]) == 12 * MiB
    other = ((0, 12 * MiB, 1), (0, 0, 1))  # the same allocation on another stream: a block of its own
    assert shared_pool_bytes([freed, other]) == 24 * MiB


def test_a_large_block_is_split_only_when_more_than_1_mib_is_left() -> None:
    # 20 MiB segment: 18.5 MiB taken leaves 1.5 MiB (split off); then 19.5 MiB taken leaves 0.5 MiB (kept whole)
    a = ((0, 18 * MiB + MiB // 2, 0), (1, MiB + 1, 0))  # the 1.5 MiB rest holds the second request
    assert shared_pool_bytes([a]) == 20 * MiB
    b = ((0, 19 * MiB + MiB // 2, 0), (1, MiB + 1, 0))  # nothing split off: the second needs a new segment
    assert shared_pool_bytes([b]) == 40 * MiB


def test_freed_neighbours_merge() -> None:
    # three 4 MiB blocks of one 20 MiB segment; freeing the first two makes one 8 MiB block that holds 7 MiB
    t = ((0, 4 * MiB, 0), (1, 4 * MiB, 0), (2, 4 * MiB, 0), (0, 0, 0), (1, 0, 0), (3, 7 * MiB, 0))
    assert shared_pool_bytes([t]) == 20 * MiB
    apart = ((0, 4 * MiB, 0), (1, 4 * MiB, 0), (2, 4 * MiB, 0), (0, 0, 0), (2, 0, 0), (3, 7 * MiB, 0))
    # freed 0 and 2 are not neighbours: 4 MiB and 8 MiB (2 merged with the segment's free tail) -> the tail serves
    assert shared_pool_bytes([apart]) == 20 * MiB


class Naive:
    """The same rules, written as plainly as possible: every block of every segment scanned on each request."""

    def __init__(self) -> None:
        self.segments: list[list[list]] = []  # per segment: [addr, size, free, stream, small] in address order
        self.addr = 0

    def malloc(self, nbytes: int, stream: int) -> tuple[int, int]:
        size = round_size(nbytes)
        small = size <= MiB
        fits = [(b[1], b[0], si, bi) for si, seg in enumerate(self.segments) for bi, b in enumerate(seg)
                if b[2] and b[3] == stream and b[4] == small and b[1] >= size]
        if fits:
            _, _, si, bi = min(fits)
        else:
            seg = segment_size(size)
            self.segments.append([[self.addr, seg, True, stream, small]])
            self.addr += seg + 2 * MiB
            si, bi = len(self.segments) - 1, 0
        block = self.segments[si][bi]
        rest = block[1] - size
        if (rest >= 512) if small else (rest > MiB):
            self.segments[si].insert(bi + 1, [block[0] + size, rest, True, stream, small])
            block[1] = size
        block[2] = False
        return si, block[0]

    def free(self, where: tuple[int, int]) -> None:
        seg = self.segments[where[0]]
        i = next(k for k, b in enumerate(seg) if b[0] == where[1])
        seg[i][2] = True
        if i + 1 < len(seg) and seg[i + 1][2]:
            seg[i][1] += seg.pop(i + 1)[1]
        if i > 0 and seg[i - 1][2]:
            seg[i - 1][1] += seg.pop(i)[1]

    def run(self, trace) -> None:
        live = {}
        for block, nbytes, stream in trace:
            if nbytes > 0:
                live[block] = self.malloc(nbytes, stream)
            elif block in live:
                self.free(live.pop(block))

    @property
    def reserved(self) -> int:
        return sum(sum(b[1] for b in seg) for seg in self.segments)


@st.composite
def traces(draw) -> tuple:
    """A capture: requests from 1 byte to 40 MiB on two streams, each freed later with probability 3/4."""
    n = draw(st.integers(1, 30))
    sizes = draw(st.lists(st.one_of(st.integers(1, 4096), st.integers(1, 2 * MiB), st.integers(1, 40 * MiB)),
                          min_size=n, max_size=n))
    streams = draw(st.lists(st.sampled_from([0, 0, 0, 1]), min_size=n, max_size=n))
    events: list[tuple[int, int, int]] = []
    live: list[int] = []
    for b, (nbytes, stream) in enumerate(zip(sizes, streams)):
        events.append((b, nbytes, stream))
        live.append(b)
        if live and draw(st.booleans()):
            gone = live.pop(draw(st.integers(0, len(live) - 1)))
            events.append((gone, 0, streams[gone]))
    for gone in live:
        if draw(st.integers(0, 3)):
            events.append((gone, 0, streams[gone]))
    return tuple(events)


@settings(max_examples=150, deadline=None)
@given(st.lists(traces(), min_size=1, max_size=4))
def test_the_simulator_matches_a_naive_allocator(captures) -> None:
    naive = Naive()
    for t in captures:
        naive.run(t)
    assert shared_pool_bytes(captures) == naive.reserved


@settings(max_examples=100, deadline=None)
@given(traces(), st.lists(traces(), max_size=3))
def test_pool_never_less_than_what_it_holds_at_once(first, rest) -> None:
    """Reserved covers the largest pool of any one of the captures when it runs first, and the rounded bytes live
    at once (every capture's kept blocks are still taken at the end)."""
    total = shared_pool_bytes([first, *rest])
    assert total >= shared_pool_bytes([first])
    kept = sum(round_size(n) for t in (first, *rest) for b, n, _ in t if n > 0 and not any(x[0] == b and x[1] == 0 for x in t))
    assert total >= kept


def affine(size: int) -> tuple:
    """A capture whose requests grow with the batch (activations) beside a fixed one (a workspace)."""
    return ((0, 3 * MiB * size + 4096, 0), (1, 256 * 1024, 0), (2, MiB * size // 2 + 1000, 0), (1, 0, 0), (2, 0, 0))


def test_interpolation_is_exact_for_requests_affine_in_the_batch() -> None:
    a, b = affine(4), affine(8)
    assert same_shape(a, b) and interpolate(a, 4, b, 8, 4) == a and interpolate(a, 4, b, 8, 8) == b
    assert interpolate(a, 4, b, 8, 5) == affine(5) and interpolate(a, 4, b, 8, 12) == affine(12)
    model = PoolModel({4: a, 8: b})
    assert model.trace(6) == (affine(6), True) and model.exact([5, 6, 7, 16])
    assert model.shared_bytes([6, 5]) == shared_pool_bytes([affine(6), affine(5)])
    odd = PoolModel({4: a, 8: b + ((9, 100, 0),)})  # shapes differ: the next measured size stands in
    assert odd.trace(6) == (odd.traces[8], False) and not odd.exact([6])


def test_the_trace_survives_json() -> None:
    trace = ((0, 1000, 0), (1, 5 * MiB, 1), (0, 0, 0), (1, 0, 1), (2, 7, 0))
    assert trace_from_json(trace_to_json(trace)) == trace
    mem = GraphMemory(20 * MiB, MiB, alloc_trace=trace)
    assert GraphMemory.from_json(mem.to_json()) == mem
    assert "alloc_trace" not in GraphMemory(20 * MiB, MiB).to_json()


def test_the_planner_prices_sets_with_the_allocator_and_keeps_the_budget() -> None:
    sizes = (1, 2, 4, 8, 16, 32)
    pool = PoolModel({s: affine(s) for s in sizes})
    model = CostModel(tuple(SizeCost(s, pool.shared_bytes([s]), 10.0, 400.0 + 2 * s, 50.0 + 3 * s) for s in sizes),
                      1.0, pool)
    assert model.memory_model == "allocator"
    hist = {1: 30.0, 3: 10.0, 5: 10.0, 12: 5.0, 20: 5.0, 30: 3.0}
    for s in ([32, 12, 3], [20, 5, 1]):
        assert evaluate(model, hist, s).memory_bytes == pool.shared_bytes(s)
    unlimited = recommend(model, hist, float("inf"))
    budget = 0.6 * unlimited.memory_bytes
    plan = recommend(model, hist, budget)
    assert plan.memory_bytes <= budget and plan.memory_bytes == pool.shared_bytes(plan.sizes)
    assert CostModel(model.points, 0.5).memory_model == "fraction"


def test_the_plan_says_how_its_memory_was_priced() -> None:
    from cgtool.bench.size_plan import compare_plans
    from cgtool.render.size_plan import plan_lines

    sizes = (1, 4, 16)
    traces = {s: affine(s) for s in sizes}
    hist = {1: 5.0, 2: 5.0, 8: 3.0, 16: 1.0}
    model = CostModel(tuple(SizeCost(s, shared_pool_bytes([traces[s]]), 10.0, 400.0, 50.0 + s) for s in sizes), 1.0,
                      PoolModel(traces))
    lines = plan_lines(compare_plans(model, hist, float("inf")), model)
    assert lines[-1].startswith("memory: the caching allocator replayed") and "likely high" not in lines[-1]
    odd = PoolModel({**traces, 16: traces[16] + ((9, 100, 0),)})  # 8 lies between captures of other shapes
    model = CostModel(model.points, 1.0, odd)
    assert "sizes 8 took the allocations of the next measured size up" in plan_lines(
        [("recommended", evaluate(model, hist, [8, 16]))], model)[-1]
    assert "largest graph's pool plus 50%" in plan_lines([], CostModel(model.points, 0.5))[-1]
