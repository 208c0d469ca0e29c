"""Where does a launch-bound eager step's time vary on this machine? (diagnostic for `cgtool bench`)

    python3 benchmarks/cpu_noise.py                # machine facts, per-CPU sweep, drift, fresh processes
    python3 benchmarks/cpu_noise.py --child        # one short measurement (used by the parent)
    python3 benchmarks/cpu_noise.py --ab           # pinned / free / random CPU taking turns in one process
    python3 benchmarks/cpu_noise.py --cpus         # every CPU probed at once for 10 s (no GPU needed)
    python3 benchmarks/cpu_noise.py --dump F [BUDGET_S TARGET]  # bench's measurement, every block + probe to F
    python3 benchmarks/cpu_noise.py --two F        # blocks after a pure-Python and a torch-dispatcher probe

Measures samples/mlp_inference.py's eager step and its replay with cgtool's own prepare/time_block.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
sys.path.insert(0, ROOT)
SAMPLE = os.path.join(ROOT, "samples", "mlp_inference.py")


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as exc:  # noqa: BLE001
        return f"({exc})"


def steal() -> tuple[int, int]:
    """(steal, total) jiffies from /proc/stat."""
    with open("/proc/stat") as fh:
        parts = [int(x) for x in fh.readline().split()[1:]]
    return parts[7] if len(parts) > 7 else 0, sum(parts)


def facts() -> None:
    print("== machine")
    print("affinity:", sorted(os.sched_getaffinity(0)))
    print(sh("lscpu | egrep 'Model name|Socket|Thread|Core|NUMA|MHz|Hypervisor|L3'"))
    print("nodes:", sh("ls /sys/devices/system/node | grep node"))
    bus = sh("nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader").lower()
    if bus:
        short = bus[4:] if bus.count(":") == 2 and len(bus.split(":")[0]) == 8 else bus
        print("gpu bus:", bus, "local_cpulist:", sh(f"cat /sys/bus/pci/devices/{short}/local_cpulist"),
              "numa_node:", sh(f"cat /sys/bus/pci/devices/{short}/numa_node"))
    print(sh("nvidia-smi topo -m"))
    print("governor:", sh("cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo none"))
    print("MHz per cpu:", sh("grep MHz /proc/cpuinfo | awk '{printf \"%.0f \", $4}'"))
    print("load:", sh("cat /proc/loadavg"))


def prepared():
    import torch

    from cgtool.bench.measure import prepare
    from cgtool.model.phase_log import PhaseLog
    from cgtool.script.contract import load_script

    torch.cuda.init()
    prep = prepare(load_script(SAMPLE), None, {"warmup": 3}, PhaseLog())
    return prep


def blocks(prep, mode: str, seconds: float, iters: int) -> list[float]:
    """Per-iteration wall µs of back-to-back blocks for `seconds`."""
    import torch

    from cgtool.bench.timing import time_block

    out, t_end = [], time.perf_counter() + seconds
    with torch.cuda.stream(prep.stream):
        while time.perf_counter() < t_end:
            out.append(time_block(prep.fns[mode], iters, prep.stream)[1])
    return out


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def child() -> None:
    prep = prepared()
    cpus = sorted(os.sched_getaffinity(0))
    res = {"pid": os.getpid()}
    res["free_eager"] = med(blocks(prep, "eager", 0.6, 8))
    res["free_replay"] = med(blocks(prep, "replay", 0.3, 25))
    for c in (cpus[-1], cpus[0], cpus[len(cpus) // 2]):
        os.sched_setaffinity(0, {c})
        res[f"cpu{c}_eager"] = med(blocks(prep, "eager", 0.4, 8))
    os.sched_setaffinity(0, set(cpus))
    print("CHILD " + json.dumps(res))


def main() -> None:
    facts()
    import gc

    prep = prepared()
    cpus = sorted(os.sched_getaffinity(0))
    gc.disable()
    s0 = steal()
    print("\n== per-CPU sweep (eager wall µs/iter median of 0.25 s; two passes) + replay")
    table = {}
    for pass_ in range(2):
        for c in cpus:
            os.sched_setaffinity(0, {c})
            time.sleep(0.02)
            table.setdefault(c, []).append(med(blocks(prep, "eager", 0.25, 8)))
            if pass_ == 0:
                table[c].append(med(blocks(prep, "replay", 0.1, 25)))
    for c in cpus:
        e1, r, e2 = table[c]
        print(f"cpu{c:>3}: eager {e1:7.1f} {e2:7.1f}   replay {r:6.1f}")
    os.sched_setaffinity(0, set(cpus))
    print("\n== drift, pinned to last CPU: eager & replay median per 0.5 s, 12 s")
    os.sched_setaffinity(0, {cpus[-1]})
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 12:
        e, r = med(blocks(prep, "eager", 0.25, 8)), med(blocks(prep, "replay", 0.25, 25))
        print(f"t={time.perf_counter() - t0:5.1f}s eager {e:7.1f} replay {r:6.1f} ratio {e / r:5.2f}")
    os.sched_setaffinity(0, set(cpus))
    print("\n== drift, unpinned: 6 s")
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 6:
        e, r = med(blocks(prep, "eager", 0.25, 8)), med(blocks(prep, "replay", 0.25, 25))
        print(f"t={time.perf_counter() - t0:5.1f}s eager {e:7.1f} replay {r:6.1f} ratio {e / r:5.2f}")
    s1 = steal()
    print(f"steal: {100 * (s1[0] - s0[0]) / max(1, s1[1] - s0[1]):.2f}% of all CPU time during the probe")
    gc.enable()
    del prep
    print("\n== 6 fresh processes, one after another")
    for _ in range(6):
        out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True)
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("CHILD ")), out.stderr[-400:])
        print(line)




def canary_us(n: int = 20000) -> float:
    """A pure-Python loop (no CUDA): µs per 1,000 iterations."""
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i & 7
    return (time.perf_counter() - t0) * 1e6 / (n / 1000)


def cpu_times() -> list[list[int]]:
    with open("/proc/stat") as fh:
        return [[int(v) for v in ln.split()[1:]] for ln in fh if ln.startswith("cpu") and ln[3].isdigit()]


def ab() -> None:
    """Strategies take short turns in one process, so host noise hits them alike: which has fewer slow turns?"""
    import gc
    import random

    prep = prepared()
    cpus = sorted(os.sched_getaffinity(0))
    gc.disable()
    strategies = {
        "free": lambda: os.sched_setaffinity(0, set(cpus)),
        "pin-last": lambda: os.sched_setaffinity(0, {cpus[-1]}),
        "pin-random": lambda: os.sched_setaffinity(0, {random.choice(cpus)}),
        "pin-all-but-0": lambda: os.sched_setaffinity(0, set(cpus[1:])),
    }
    rows: dict[str, list[tuple[float, float, float]]] = {k: [] for k in strategies}
    c0 = cpu_times()
    t0 = time.perf_counter()
    order = list(strategies)
    while time.perf_counter() - t0 < 48:
        random.shuffle(order)
        for name in order:
            strategies[name]()
            canary = statistics.median(canary_us() for _ in range(5))
            rows[name].append((med(blocks(prep, "eager", 0.25, 8)), med(blocks(prep, "replay", 0.1, 25)), canary))
    c1 = cpu_times()
    os.sched_setaffinity(0, set(cpus))
    allmed = [e for r in rows.values() for e, _, _ in r]
    quiet = min(allmed)
    print(f"quietest turn eager {quiet:.1f} µs")
    for name, r in rows.items():
        es = [e for e, _, _ in r]
        slow = sum(e > 1.08 * quiet for e in es)
        print(f"{name:>14}: turns {len(r):3d} slow(>+8%) {slow:3d}  eager median-of-turns {med(es):7.1f}  "
              f"min {min(es):7.1f}  replay {med([x for _, x, _ in r]):6.1f}  canary {med([c for _, _, c in r]):6.1f}")
    print("turn-by-turn eager vs canary (is the slowdown CPU-wide?):")
    for name, r in rows.items():
        print(name, " ".join(f"{e:.0f}/{c:.0f}" for e, _, c in r[:14]))
    busy = [sum(b) - sum(a) - ((b[3] + b[4]) - (a[3] + a[4])) for a, b in zip(c0, c1)]
    tot = [sum(b) - sum(a) for a, b in zip(c0, c1)]
    print("per-CPU busy %:", " ".join(f"{100 * x / max(1, t):.0f}" for x, t in zip(busy, tot)))
    print("steal per CPU (jiffies):", " ".join(str(b[7] - a[7]) for a, b in zip(c0, c1)))


def dump(path: str, budget_s: float = 10.0, target: float = 0.01) -> None:
    """One measurement as `cgtool bench` takes it (bench.run.measure), every block and probe written to `path`."""
    from cgtool.bench.measure import measure
    from cgtool.bench.result import BenchResult
    from cgtool.model.phase_log import PhaseLog

    rounds = measure(prepared(), {"budget_s": budget_s, "target": target}, PhaseLog())
    r = BenchResult.from_rounds(rounds, script=SAMPLE, entry="step")
    with open(path, "w") as fh:
        json.dump(rounds.to_json(), fh)
    load = r.cpu_load
    print(f"DUMP headline {r.speedup_wall.point:.3f} all {load.all_speedup:.3f} slowed {load.slowed_fraction:.0%} "
          f"eager {r.eager.wall.median:.1f} (all {load.all_eager_us:.1f}) {r.stopped_by} {r.elapsed_s:.1f}s")


def _probe_cpu(args: tuple[int, float]) -> list[tuple[float, float]]:
    from cgtool.bench.cpu_load import cpu_probe

    cpu, until = args
    os.sched_setaffinity(0, {cpu})
    out = []
    while time.time() < until:
        out.append((time.time(), cpu_probe()))
        time.sleep(0.005)
    return out


def cpus() -> None:
    """Every CPU probed at once for 10 s: when the CPU is slowed, is it slowed everywhere?"""
    import multiprocessing

    ids = sorted(os.sched_getaffinity(0))
    start = time.time() + 1.0
    with multiprocessing.Pool(len(ids)) as pool:
        runs = pool.map(_probe_cpu, [(c, start + 10.0) for c in ids])
    floor = min(p for r in runs for _, p in r)
    print(f"probe floor {floor:.1f} µs; median probe / floor per CPU (rows) per 0.5 s (columns)")
    for cpu, r in zip(ids, runs):
        cells = []
        for k in range(20):
            xs = [p for t, p in r if start + 0.5 * k <= t < start + 0.5 * (k + 1)]
            cells.append(f"{statistics.median(xs) / floor:4.2f}" if xs else "  - ")
        print(f"cpu{cpu:>2} " + " ".join(cells))


def two_probes(path: str, seconds: float = 5.0) -> None:
    """Blocks of eager and replay, each after both a pure-Python probe and a torch-dispatcher probe (small
    CPU tensor ops, the eager path's own software): which one tracks eager's speed?"""
    import gc

    import torch

    from cgtool.bench.cpu_load import cpu_probe
    from cgtool.bench.timing import time_block

    prep = prepared()
    a = torch.ones(8)

    def torch_probe(n: int = 40) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            torch.add(a, a)
        return (time.perf_counter() - t0) * 1e6

    rows = []
    gc.disable()
    t_end = time.perf_counter() + seconds
    with torch.cuda.stream(prep.stream):
        while time.perf_counter() < t_end:
            for mode, iters in (("eager", 8), ("replay", 25)):
                p1, p2 = cpu_probe(), torch_probe()
                rows.append((mode, time_block(prep.fns[mode], iters, prep.stream)[1], p1, p2))
    gc.enable()
    with open(path, "w") as fh:
        json.dump(rows, fh)
    print(f"TWO {len(rows)} blocks")


if __name__ == "__main__":
    if "--two" in sys.argv:
        two_probes(sys.argv[sys.argv.index("--two") + 1])
        sys.exit()
    if "--cpus" in sys.argv:
        cpus()
        sys.exit()
    if "--dump" in sys.argv:
        at = sys.argv.index("--dump")
        dump(sys.argv[at + 1], *(float(x) for x in sys.argv[at + 2:at + 4]))
    else:
        child() if "--child" in sys.argv else ab() if "--ab" in sys.argv else main()
