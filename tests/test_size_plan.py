"""The capture-size planner (cgtool.bench.size_plan), the pool reading from snapshot segments
(cgtool.model.graph_memory) and the kernel busy time (cgtool.bench.stats.busy_time): plain numbers, no torch."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgtool.bench.size_plan import (
    CostModel,
    SizeCost,
    evaluate,
    parse_histogram,
    range_histogram,
    recommend,
    shared_extra,
    step_us,
    vllm_sizes,
)
from cgtool.bench.stats import busy_time
from cgtool.model.graph_memory import GraphMemory, SharedPool, pool_from_segments

MiB = 2**20


def model(shared: float = 1.0, sizes=(1, 2, 4, 8, 16, 32, 64)) -> CostModel:
    """Eager is launch-bound (flat, then rising), replay grows with size, the pool grows with size."""
    return CostModel(tuple(SizeCost(s, (4 + s) * MiB, 10.0 + 0.2 * s, 400.0 + 2 * s, 50.0 + 3 * s) for s in sizes), shared)


def test_pool_from_segments_counts_only_that_pool() -> None:
    segments = [
        {"segment_pool_id": (0, 0), "total_size": 100 * MiB, "allocated_size": 50 * MiB},  # the default pool
        {"segment_pool_id": (1, 3), "total_size": 20 * MiB, "allocated_size": 18 * MiB},
        {"segment_pool_id": [1, 3], "total_size": 2 * MiB, "allocated_size": 0},  # lists, as JSON gives them
        {"segment_pool_id": (1, 4), "total_size": 8 * MiB, "allocated_size": 8 * MiB},  # another graph
        {"total_size": 1 * MiB},
    ]
    assert pool_from_segments(segments, (1, 3)) == (22 * MiB, 18 * MiB)
    assert pool_from_segments(segments, (9, 9)) == (0, 0)


def test_memory_records_round_trip() -> None:
    mem = GraphMemory(34 * MiB, 30 * MiB, 1024, 4096, None)
    assert GraphMemory.from_json(mem.to_json()) == mem
    sp = SharedPool((8, 4, 2, 1), 40 * MiB, 35 * MiB, 120.5, 90 * MiB)
    assert SharedPool.from_json(sp.to_json()) == sp


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 20)), max_size=12))
def test_busy_time_is_the_union_of_intervals(raw: list[tuple[int, int]]) -> None:
    intervals = [(float(a), float(a + d)) for a, d in raw]
    covered = {t for a, b in intervals for t in range(int(a), int(b))}  # unit cells covered by some interval
    assert busy_time(intervals) == len(covered)
    assert busy_time(intervals) <= sum(b - a for a, b in intervals)  # never above the plain sum


def test_interpolation_and_extrapolation() -> None:
    m = model()
    assert m.value("replay_us", 8) == 74.0
    assert m.value("replay_us", 12) == pytest.approx(86.0)  # halfway between 8 and 16
    assert m.value("replay_us", 128) == pytest.approx(50 + 3 * 128)  # linear beyond the largest measured size
    assert m.value("pool_bytes", 0.5) >= 0


def test_step_pads_to_the_next_captured_size_and_runs_eager_above() -> None:
    m = model()
    assert step_us(m, 3, [4, 16]) == m.value("replay_us", 4)
    assert step_us(m, 4, [4, 16]) == m.value("replay_us", 4)
    assert step_us(m, 17, [4, 16]) == m.value("eager_us", 17)


def test_memory_of_separate_and_shared_pools() -> None:
    assert model(1.0).memory([1, 2]) == (5 + 6) * MiB
    assert model(0.0).memory([1, 2, 64]) == 68 * MiB  # everything fits in the largest graph's blocks
    assert model(0.5).memory([2, 64]) == 68 * MiB + 3 * MiB


def test_shared_extra_from_a_measurement() -> None:
    pools = {1: 5 * MiB, 2: 6 * MiB, 4: 8 * MiB}
    assert shared_extra(pools, 8 * MiB) == 0.0
    assert shared_extra(pools, 19 * MiB) == 1.0
    assert shared_extra(pools, int(8 * MiB + 5.5 * MiB)) == pytest.approx(0.5)
    assert shared_extra(pools, 30 * MiB) == 1.0 and shared_extra({}, 0) == 1.0


def test_capturing_every_batch_gives_the_per_size_speedup() -> None:
    m = model()
    hist = {4: 1.0}
    plan = evaluate(m, hist, [4])
    assert plan.speedup == pytest.approx(m.value("eager_us", 4) / m.value("replay_us", 4))
    assert evaluate(m, hist, []).speedup == 1.0
    assert not plan.extrapolated and evaluate(m, {100: 1.0}, []).extrapolated


def test_recommend_on_a_range_keeps_the_budget_and_beats_nothing() -> None:
    m = model(0.3)
    hist = range_histogram(1, 64)
    for budget in (70 * MiB, 100 * MiB, 10**12):
        plan = recommend(m, hist, budget)
        assert plan.memory_bytes <= budget
        assert plan.speedup > 1
    tight = recommend(m, hist, 3 * MiB)  # nothing fits
    assert tight.sizes == () and tight.speedup == 1.0
    assert len(recommend(m, hist, 10**12, max_sizes=3).sizes) == 3


def test_recommend_against_vllm_defaults() -> None:
    """Over a range, the plan reaches most of vLLM's list's speedup with fewer sizes and less memory."""
    m = model(1.0, sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256))
    hist = range_histogram(1, 256)
    vllm = evaluate(m, hist, vllm_sizes(256))
    plan = recommend(m, hist, vllm.memory_bytes)
    assert plan.memory_bytes <= vllm.memory_bytes and len(plan.sizes) < len(vllm.sizes)
    assert plan.speedup >= 0.9 * vllm.speedup


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.integers(1, 40), st.floats(0.1, 100), min_size=1, max_size=8),
       st.floats(0.0, 1.0), st.integers(6, 200))
def test_recommend_is_as_good_as_any_small_set_within_budget(hist: dict[int, float], extra: float, budget_mib: int) -> None:
    """The greedy plan fits the budget, never loses to eager, and is within 25% of the best set of its size."""
    m = model(extra)
    budget = budget_mib * MiB
    plan = recommend(m, hist, budget, min_gain=0.0)
    assert plan.memory_bytes <= budget
    assert plan.mean_us <= plan.eager_mean_us + 1e-9
    k = max(1, len(plan.sizes))
    best = min((evaluate(m, hist, c).mean_us for r in range(k + 1) for c in itertools.combinations(sorted(hist), r)
                if m.memory(c) <= budget), default=plan.mean_us)
    assert plan.mean_us <= best * 1.25 + 1e-9


def test_vllm_default_sizes() -> None:
    assert vllm_sizes(8) == [1, 2, 4, 8]
    assert len(vllm_sizes(512)) == 51  # 51 sizes up to 512 in recent vLLM
    assert vllm_sizes(512)[-3:] == [480, 496, 512] and 248 in vllm_sizes(256) and 256 in vllm_sizes(256)


def test_parse_histogram() -> None:
    assert parse_histogram({"1": 10, "8": 2.5}) == {1: 10.0, 8: 2.5}
    assert parse_histogram([1, 1, 4]) == {1: 2.0, 4: 1.0}
    for bad in ({"x": 1}, {"0": 1}, {"2": -1}, {"2": 0}, "1,2", [None]):
        with pytest.raises(ValueError):
            parse_histogram(bad)
    with pytest.raises(ValueError):
        range_histogram(5, 2)


def test_parse_sizes_lists_and_ranges() -> None:
    from cgtool.bench.size_plan import parse_sizes

    assert parse_sizes("1,2,4") == [1, 2, 4]
    assert parse_sizes("1:256") == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert parse_sizes("1:24") == [1, 2, 4, 8, 16, 24]
    assert parse_sizes("8:32:8,1") == [8, 16, 24, 32, 1]
    for bad in ("0", "a", "4:2", "1:8:0", "1:2:3:4", "", "-1"):
        with pytest.raises(ValueError):
            parse_sizes(bad)


def test_parse_bytes() -> None:
    from cgtool.bench.size_plan import parse_bytes

    assert parse_bytes("512MiB") == 512 * MiB and parse_bytes("2GiB") == 2**31 and parse_bytes("1.5G") == 3 * 2**29
    assert parse_bytes("300m") == 300 * MiB and parse_bytes("4096") == 4096 and parse_bytes("8KB") == 8192
    for bad in ("", "x", "-1G", "0", "inf"):
        with pytest.raises(ValueError):
            parse_bytes(bad)
