"""How fast the CPU ran while bench measured, and which timed blocks count. Pure Python; no torch.

On shared machines (cloud VMs) the host slows a CPU down for seconds at a time. On the H100 VM we develop
on, a pure-Python loop ran up to 2x slower for 0.5 to 10 s at a stretch, with no steal time shown in the
guest. A launch-bound eager step slows with its CPU (1.3-1.8x) while replay does not, so a plain median
speedup of the MLP sample moved from 2.8x to 5.0x between consecutive runs.

So before each timed block bench runs a fixed pure-Python loop (the probe). A block whose probe took more
than QUIET_FACTOR times the run's fastest probe ran on a slowed CPU: it is left out of the headline numbers,
which are reported beside them "as measured", every block counted. (Moving the launching thread to the
fastest CPU when its own slowed was tried and dropped: in 4+4 alternating runs it left as many blocks
slowed and made eager 5-20% slower, the thread's caches going cold at each move.)
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cgtool.model.codec import Record

# A probe this much slower than the run's fastest one marks its block as run on a slowed CPU. Probes of a CPU
# at full speed spread about ±10% (timer interrupts, turbo); slowed ones were 1.3-2.2x on the H100 VM.
QUIET_FACTOR = 1.25
# A run with at least this share of its blocks on a slowed CPU gives no trustworthy speedup: the few full-speed
# blocks left are a biased sample (seen on the H200 VM: 98% slowed, a "4.5x (CI 4.5-4.8)" against 2.8-3.0x).
UNTRUSTED_SLOWED_FRACTION = 0.5
PROBE_LOOPS = 4000  # about 150 µs at full speed on a 2.1 GHz Xeon VM; the timed blocks are ~5 ms


def cpu_probe(loops: int = PROBE_LOOPS) -> float:
    """Microseconds a fixed pure-Python loop takes: how fast this CPU runs Python right now."""
    t0 = time.perf_counter()
    x = 0
    for i in range(loops):
        x ^= i
    return (time.perf_counter() - t0) * 1e6


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
class CpuLoad(Record):
    """What the probes saw over one measurement, and what the numbers were with every block counted."""

    JSON_COMPUTED = {"slowed_fraction": lambda c: c.slowed_fraction, "untrustworthy": lambda c: c.untrustworthy}

    probe_floor_us: float  # the run's fastest probe: the CPU at full speed
    limit_us: float  # probes above this marked their block as slowed (QUIET_FACTOR x the floor)
    blocks: int  # timed blocks with a probe
    slowed: int  # of those, blocks run on a slowed CPU
    max_slowdown: float  # the slowest probe over the fastest
    used_all: bool  # too few full-speed blocks for a CI: the headline numbers count every block
    all_eager_us: float  # median eager wall time over every block
    all_replay_us: float  # median replay wall time over every block
    all_speedup: float  # all_eager_us / all_replay_us: the speedup as measured on the loaded CPU
    # The fastest probe ever seen on this machine (the user's cache, cgtool/pipeline/machine_cache.py) before this
    # run; None when unknown. A run whose own fastest probe is far slower never saw the CPU at full speed.
    machine_best_us: float | None = None

    @property
    def slowed_fraction(self) -> float:
        return self.slowed / self.blocks if self.blocks else 0.0

    @property
    def untrustworthy(self) -> str | None:
        """Why this run's speedup cannot be trusted, or None: most blocks ran on a slowed CPU, or even the
        fastest block's CPU was slowed against the fastest this machine has shown."""
        if self.blocks and self.slowed_fraction >= UNTRUSTED_SLOWED_FRACTION:
            return f"the CPU ran slowed by other load during {self.slowed_fraction:.0%} of the timed blocks"
        if self.machine_best_us and self.probe_floor_us > QUIET_FACTOR * self.machine_best_us:
            return (f"the CPU never ran at full speed: this run's fastest probe took {self.probe_floor_us:.0f} µs, "
                    f"{self.probe_floor_us / self.machine_best_us:.1f}× the fastest seen on this machine "
                    f"({self.machine_best_us:.0f} µs)")
        return None
