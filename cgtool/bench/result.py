"""Bench records: one BenchResult per size, a BenchReport per run; versioned JSON (docs/bench.md).

All times are in microseconds unless the name says otherwise (capture_ms, instantiate_ms, elapsed_s).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cgtool.bench.adaptive import AdaptiveResult
from cgtool.bench.cpu_load import CpuLoad
from cgtool.bench.estimate import CLOCKS, Estimate, ModeResult, finite
from cgtool.bench.stats import (
    Stats,
    batch_ratio_ci,
    batch_rel_ci,
    difference_ci,
    median_ci_ranks,
    quantile,
    speedup_ci,
)
from cgtool.model.codec import Record, meta, null_as
from cgtool.model.graph_memory import GraphMemory, SharedPool
from cgtool.model.report import ErrorRecord

BENCH_SCHEMA_VERSION = 1
BENCH_KIND = "cgtool-bench"  # tells a bench report from a capture report.json
MODES = ("eager", "replay")
FLOOR_KERNELS = "kernels"  # gpu_floor_us: the time some kernel of a replay was running (union of kernel intervals)
FLOOR_REPLAY_GPU = "replay-gpu"  # replay's event-timed GPU time, where it is below the kernel figure or none was measured
FLOOR_REPLAY_WALL = "replay-wall"  # replay's wall time itself, where noise put it below both: replay runs at the floor


@dataclass(frozen=True)
class BenchResult(Record):
    """Eager versus replay for one script (and one size of a sweep)."""

    # derived, for readers of the JSON; reading recomputes them
    JSON_COMPUTED = {"iterations": lambda r: r.iterations, "floor_us": lambda r: r.floor_us,
                     "floor_source": lambda r: r.floor_source, "replay_floor_share": lambda r: r.replay_floor_share}

    script: str
    entry: str
    size: int | None  # the `size` passed to setup/inputs in a sweep; None without --sizes
    eager: ModeResult
    replay: ModeResult
    speedup_gpu: Estimate  # median eager GPU time / median replay GPU time, bootstrap CI
    speedup_wall: Estimate  # the same on wall time: what a training or serving loop sees
    overhead_saved_us: Estimate  # median eager wall - median replay wall: launch overhead graphs remove
    stopped_by: str  # converged, budget, iterations (cgtool.bench.adaptive)
    rounds: int
    elapsed_s: float
    target_rel_ci: float | None
    # the widest batch-medians CI of the four series (inf: too few samples; null in JSON)
    batch_rel_ci: float | None = field(default=None, metadata=meta(write=lambda x: None if x is None else finite(x),
                                                                   read=null_as(math.inf)))
    gpu_floor_us: float | None = None  # GPU busy time per replay (union of its kernels' intervals), when profiled
    capture_ms: float | None = None
    instantiate_ms: float | None = None
    pool_bytes: int | None = None  # memory held by the graph's private memory pool (allocator segments of it)
    memory: GraphMemory | None = None  # the pool split into reserved and allocated, static buffers, capture peak
    environment: dict[str, Any] = field(default_factory=dict)
    cpu_load: CpuLoad | None = None  # what the CPU-speed probes saw; None when none were taken

    @property
    def modes(self) -> tuple[ModeResult, ModeResult]:
        return (self.eager, self.replay)

    @property
    def iterations(self) -> int:
        """Iterations timed per mode (the smaller count of the two)."""
        return min(self.eager.iterations, self.replay.iterations)

    @property
    def worst_rel_ci(self) -> float:
        """The widest relative CI among the four series, median and batch CIs alike: what the stopping rule
        compared with the target."""
        medians = max(s.rel_ci for m in self.modes for s in (m.gpu, m.wall))
        return medians if self.batch_rel_ci is None else max(medians, self.batch_rel_ci)

    def speedup(self, clock: str = "wall") -> Estimate:
        return self.speedup_gpu if clock == "gpu" else self.speedup_wall

    def _floor(self) -> tuple[float, str]:
        """The least of the GPU-bound figures: a floor that replay cannot beat, so its share is at most 100%."""
        options = [(self.replay.gpu.median, FLOOR_REPLAY_GPU), (self.replay.wall.median, FLOOR_REPLAY_WALL)]
        if self.gpu_floor_us is not None and self.gpu_floor_us > 0:
            options.insert(0, (self.gpu_floor_us, FLOOR_KERNELS))
        return min(options, key=lambda o: o[0])

    @property
    def floor_us(self) -> float:
        """The GPU-bound floor per iteration: the least of the replay's kernel busy time, its event-timed GPU time
        and its wall time (docs/bench.md)."""
        return self._floor()[0]

    @property
    def floor_source(self) -> str:
        return self._floor()[1]

    @property
    def replay_floor_share(self) -> float:
        """floor / replay wall time: 1.0 means replay runs at the GPU-bound floor, 0.5 means twice it."""
        return self.floor_us / self.replay.wall.median if self.replay.wall.median else 0.0

    @property
    def eager_floor_share(self) -> float:
        return self.floor_us / self.eager.wall.median if self.eager.wall.median else 0.0

    @classmethod
    def from_rounds(
        cls,
        rounds: AdaptiveResult,
        *,
        script: str,
        entry: str,
        size: int | None = None,
        gpu_floor_us: float | None = None,
        capture_ms: float | None = None,
        instantiate_ms: float | None = None,
        pool_bytes: int | None = None,
        memory: GraphMemory | None = None,
        environment: dict[str, Any] | None = None,
        machine_best_us: float | None = None,
        resamples: int = 2000,
        seed: int = 0,
    ) -> BenchResult:
        """Summarize run_rounds' samples, which must hold modes eager and replay, each with clocks gpu and wall.

        The numbers count the blocks run on a CPU at full speed (cgtool.bench.cpu_load), unless some series has
        too few of them for a median CI; then every block counts, and cpu_load.used_all says so.
        """
        for mode in MODES:
            missing = [c for c in CLOCKS if not rounds.samples.get(mode, {}).get(c)]
            if missing:
                raise ValueError(f"no {'/'.join(missing)} samples for mode {mode!r}")
        conf = rounds.confidence
        s = {m: {c: rounds.quiet_samples(m, c) for c in CLOCKS} for m in MODES}
        used_all = any(not _ci_possible(len(xs), conf) for clocks in s.values() for xs in clocks.values())
        if used_all:
            s = {m: {c: list(rounds.samples[m][c]) for c in CLOCKS} for m in MODES}

        def boot(fn: Callable[..., tuple[float, float, float]], clock: str) -> Estimate:
            point, low, high = fn(s["eager"][clock], s["replay"][clock], conf, resamples, seed)
            return Estimate(point, low, high, conf)

        def ratio(clock: str) -> Estimate:
            """The bootstrap CI, widened to the batch-medians CI where the ratio drifted during the run."""
            e = boot(speedup_ci, clock)
            factor = batch_ratio_ci(s["eager"][clock], s["replay"][clock], conf)
            if factor is None or not math.isfinite(e.point):
                return e
            return Estimate(e.point, min(e.low, e.point / factor), max(e.high, e.point * factor), conf)

        return cls(
            script=script,
            entry=entry,
            size=size,
            eager=cls._mode(s, rounds, "eager"),
            replay=cls._mode(s, rounds, "replay"),
            speedup_gpu=ratio("gpu"),
            speedup_wall=ratio("wall"),
            overhead_saved_us=boot(difference_ci, "wall"),
            stopped_by=rounds.stopped_by,
            rounds=rounds.rounds,
            elapsed_s=rounds.elapsed_s,
            target_rel_ci=rounds.target_rel_ci,
            batch_rel_ci=max(batch_rel_ci(xs, conf) for clocks in s.values() for xs in clocks.values()),
            gpu_floor_us=gpu_floor_us,
            capture_ms=capture_ms,
            instantiate_ms=instantiate_ms,
            pool_bytes=pool_bytes,
            memory=memory,
            environment=dict(environment or {}),
            cpu_load=_cpu_load(rounds, used_all, machine_best_us),
        )

    @staticmethod
    def _mode(s: dict[str, dict[str, list[float]]], rounds: AdaptiveResult, mode: str) -> ModeResult:
        share = len(s[mode]["wall"]) / max(1, len(rounds.samples[mode]["wall"]))  # iterations of the counted blocks
        return ModeResult(mode, Stats.of(s[mode]["gpu"], rounds.confidence), Stats.of(s[mode]["wall"], rounds.confidence),
                          round(rounds.iterations[mode] * share))


def _ci_possible(n: int, confidence: float) -> bool:
    return n > 0 and median_ci_ranks(n, confidence)[2] + 1e-12 >= confidence


def _cpu_load(rounds: AdaptiveResult, used_all: bool, machine_best_us: float | None = None) -> CpuLoad | None:
    """Summarize the probes: how many blocks ran on a slowed CPU, and the numbers with every block counted."""
    probes = [p for m in MODES for p in rounds.probes.get(m, {}).get("wall", []) if p is not None]
    limit = rounds.limit
    if not probes or limit is None:
        return None
    eager, replay = (quantile(sorted(rounds.samples[m]["wall"]), 0.5) for m in MODES)
    floor = min(probes)
    return CpuLoad(probe_floor_us=floor, limit_us=limit, blocks=len(probes), slowed=sum(p > limit for p in probes),
                   max_slowdown=max(probes) / floor if floor > 0 else 1.0, used_all=used_all, all_eager_us=eager,
                   all_replay_us=replay, all_speedup=eager / replay if replay else math.inf,
                   machine_best_us=machine_best_us)


@dataclass(frozen=True)
class BenchReport(Record):
    """One `cgtool bench` run: a result per size (one without --sizes), the settings, and sizes that failed."""

    JSON_ORDER = ("kind", "schema", "cgtool_version", "settings", "results", "errors", "shared_pool")
    JSON_COMPUTED = {"kind": lambda _: BENCH_KIND, "schema": lambda _: BENCH_SCHEMA_VERSION}

    results: tuple[BenchResult, ...]
    settings: dict[str, Any] = field(default_factory=dict)  # warmup, l2_flush, budget_s, target, iters, sizes
    errors: tuple[ErrorRecord, ...] = ()  # e.g. a size whose capture failed; the sweep goes on without it
    cgtool_version: str = ""
    shared_pool: SharedPool | None = None  # a sweep's sizes captured again into one pool, largest first

    @property
    def sizes(self) -> list[int | None]:
        return [r.size for r in self.results]

    def result_for(self, size: int | None) -> BenchResult | None:
        return next((r for r in self.results if r.size == size), None)

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        """Only a bench report of this schema, with a list of results, reads."""
        if not isinstance(d, dict):
            raise ValueError("not a cgtool bench report (the JSON is not an object)")
        if d.get("kind") != BENCH_KIND:
            raise ValueError("not a cgtool bench report (no \"kind\": \"cgtool-bench\")")
        if d.get("schema") != BENCH_SCHEMA_VERSION:
            raise ValueError(f"bench report schema {d.get('schema')!r} is not the supported version {BENCH_SCHEMA_VERSION}")
        if not isinstance(d.get("results"), list) or not all(isinstance(r, dict) for r in d["results"]):
            raise ValueError("`results` must be a list of objects, one per size")
        return d
