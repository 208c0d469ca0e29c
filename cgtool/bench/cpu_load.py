"""How fast the CPU ran while bench measured, keeping the launching thread on a CPU at full speed, and which
timed blocks count. Pure Python; no torch.

On shared machines (cloud VMs) the host slows single CPUs down for seconds at a time. On the H100 VM we
develop on, a pure-Python loop ran 2x slower on a given CPU for 0.5 to 10 s at a stretch (no steal time
shown in the guest), while at the same moment other CPUs ran at full speed. A launch-bound eager step slows
with its CPU while replay does not, so a plain median speedup moved from 2.8x to 5.0x between runs.

So before each timed block bench runs a fixed pure-Python loop (the probe). If the probe took more than
QUIET_FACTOR times the run's fastest probe, the CPU is slowed: CpuSeeker probes every CPU the process may
use and moves the launching thread to the fastest. A block whose probe still shows a slowed CPU is left out
of the headline numbers, which are reported beside them "as measured" with every block counted.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# A probe this much slower than the run's fastest one marks its block as run on a slowed CPU. Probes of a CPU
# at full speed spread about ±10% (timer interrupts, turbo); slowed ones were 1.3-2.2x on the H100 VM.
QUIET_FACTOR = 1.25
PROBE_LOOPS = 4000  # about 150 µs at full speed on a 2.1 GHz Xeon VM; the timed blocks are ~5 ms


def cpu_probe(loops: int = PROBE_LOOPS) -> float:
    """Microseconds a fixed pure-Python loop takes: how fast this CPU runs Python right now."""
    t0 = time.perf_counter()
    x = 0
    for i in range(loops):
        x ^= i
    return (time.perf_counter() - t0) * 1e6


class CpuSeeker:
    """Keeps the calling (launching) thread on a CPU running at full speed: probe before each block, and when
    the probe shows this CPU slowed, probe every allowed CPU and move the thread to the fastest one.

    Without sched_setaffinity (not Linux) or with one CPU allowed (e.g. under taskset), it only probes.
    """

    RESCAN_S = 0.1  # after a scan found no CPU at full speed, wait this long before scanning again

    def __init__(self, move: bool = True, probe=cpu_probe, clock=time.perf_counter) -> None:
        self.probe, self.clock = probe, clock
        try:
            self.allowed: list[int] = sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            self.allowed = []
        self.move = move and len(self.allowed) > 1
        self.floor = math.inf
        self.cpu: int | None = None  # where the thread is pinned; None while it is free
        self.moves = 0  # scans that put the thread on another CPU
        self._next_scan = -math.inf

    def start(self) -> None:
        """Begin on the fastest CPU (when moving), so the floor is known before the first block."""
        if self.move:
            self._scan()

    def before_block(self) -> float:
        """The probe of the CPU the next block runs on; moves the thread first when this CPU is slowed."""
        p = self._probe()
        if self.move and p > self.floor * QUIET_FACTOR and self.clock() >= self._next_scan:
            self._scan()
            p = self._probe()
        return p

    def stop(self) -> None:
        """Give the thread back all the CPUs it was allowed."""
        if self.cpu is not None:
            try:
                os.sched_setaffinity(0, set(self.allowed))
            except OSError:
                pass
            self.cpu = None

    def _probe(self) -> float:
        p = self.probe()
        self.floor = min(self.floor, p)
        return p

    def _scan(self) -> None:
        best_cpu, best = None, math.inf
        try:
            for cpu in self.allowed:
                os.sched_setaffinity(0, {cpu})
                p = self._probe()
                if p < best:
                    best_cpu, best = cpu, p
            os.sched_setaffinity(0, {best_cpu})
        except OSError:  # a CPU went offline or the affinity was changed under us: stop moving
            self.move = False
            self.stop()
            return
        if best_cpu != self.cpu and self.cpu is not None:
            self.moves += 1
        self.cpu = best_cpu
        if best > self.floor * QUIET_FACTOR:
            self._next_scan = self.clock() + self.RESCAN_S


def quiet_limit(probes: Iterable[float | None]) -> float | None:
    """The slowest probe that still counts as a CPU at full speed; None when no probe was taken."""
    taken = [p for p in probes if p is not None]
    return min(taken) * QUIET_FACTOR if taken else None


def quiet(samples: Sequence[float], probes: Sequence[float | None], limit: float | None) -> list[float]:
    """The samples whose block ran on a CPU at full speed (all of them when there is no limit or probe)."""
    if limit is None:
        return list(samples)
    return [x for x, p in zip(samples, probes) if p is None or p <= limit]


@dataclass(frozen=True)
class CpuLoad:
    """What the probes saw over one measurement, and what the numbers were with every block counted."""

    probe_floor_us: float  # the run's fastest probe: the CPU at full speed
    limit_us: float  # probes above this marked their block as slowed (QUIET_FACTOR x the floor)
    blocks: int  # timed blocks with a probe
    slowed: int  # of those, blocks run on a slowed CPU
    max_slowdown: float  # the slowest probe over the fastest
    moves: int  # times CpuSeeker moved the launching thread to a faster CPU
    used_all: bool  # too few full-speed blocks for a CI: the headline numbers count every block
    all_eager_us: float  # median eager wall time over every block
    all_replay_us: float  # median replay wall time over every block
    all_speedup: float  # all_eager_us / all_replay_us: the speedup as measured on the loaded CPU

    @property
    def slowed_fraction(self) -> float:
        return self.slowed / self.blocks if self.blocks else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "slowed_fraction": self.slowed_fraction}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CpuLoad:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})
