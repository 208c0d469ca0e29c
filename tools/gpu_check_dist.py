"""gpu_check's "distributed" section: the probe (plain torch), then `cgtool capture --nproc-per-node N` on the
clean samples and the hazard samples, orphaned processes, and the cost of N ranks against one. N is 2 on a
machine with 2 or more GPUs, else 1 (a world of 1 on NCCL: what one GPU can show)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from typing import Callable

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
CLEAN = ["tensor_parallel", "ddp_train"]
HAZARDS = ["rank_dependent", "one_rank_fails", "ddp_default_stream"]


def leftovers() -> list[str]:
    """Processes a distributed run may leave behind (ranks, launchers, the probe), as `ps` shows them."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,etimes,args"], capture_output=True, text=True).stdout
    keys = ("cgtool.worker.rank_child", "torch.distributed.run", "dist_probe.py")
    return [ln.strip() for ln in out.splitlines() if any(k in ln for k in keys) and "ps -eo" not in ln]


def section(root: str, out: str, work: str, row: Callable[[str, bool | None, str], None],
            markers: Callable[[str], list[tuple[int, str]]]) -> None:
    import torch

    env = dict(os.environ, NO_COLOR="1", COLUMNS="200", **MULTICAST_OFF)
    n = min(2, torch.cuda.device_count())
    row("distributed: world size", n >= 2 or None,
        f"{torch.cuda.device_count()} GPU(s): running {n} rank(s)" + ("" if n >= 2 else " (2-rank rows blocked here)"))
    if n < 1:
        return
    probe(root, work, n, env, row)
    walls: dict[tuple[str, int], float] = {}

    def capture(path: str, nproc: int, tag: str, timeout: int = 300) -> tuple[subprocess.CompletedProcess, dict, float]:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "cgtool", "capture", path, "--nproc-per-node", str(nproc), "--timeout",
                            str(timeout), "--out", os.path.join(work, "dist", tag)], capture_output=True, text=True,
                           cwd=root, env=env, timeout=timeout + 60)
        wall = time.perf_counter() - t0
        with open(os.path.join(out, "distributed.txt"), "a") as fh:  # one file: $OUT brings back few
            fh.write(f"===== {tag}: exit {r.returncode}, {wall:.1f} s\n{r.stdout}{r.stderr}\n")
        try:
            data = json.load(open(os.path.join(work, "dist", tag, "report.json")))
        except (OSError, ValueError):
            data = {}
        return r, data, wall

    for name in CLEAN:
        r, data, wall = capture(os.path.join(root, "samples", "distributed", f"{name}.py"), n, f"{name}_{n}")
        walls[(name, n)] = wall
        ranks = data.get("ranks", [])
        ok_ranks = [rk for rk in ranks if (rk.get("report") or {}).get("status") == "captured"]
        match = [rk for rk in ranks if rk.get("summary", {}).get("replay") == "match"]
        nccl = sorted({k for rk in ranks for k in (rk.get("summary", {}).get("nccl_kernels") or {})})
        speed = ", ".join(f"rank {rk['rank']} {rk['summary'].get('speedup', 0):.2f}x" for rk in ranks
                          if rk.get("summary", {}).get("speedup"))
        step = data.get("step", {})
        ok = r.returncode == 0 and len(ok_ranks) == n and len(match) == n and bool(nccl or n == 1)
        row(f"distributed capture {name} ({n} ranks)", ok,
            f"exit {r.returncode}; captured {len(ok_ranks)}/{n}, replay match {len(match)}/{n}; NCCL kernels "
            f"{nccl[:3] or 'none'}; speedup {speed or '-'}; step {step.get('speedup') or 0:.2f}x (slowest rank); "
            f"findings {[f['rule'] + '@' + str(f['line']) for f in data.get('findings', [])]}; wall {wall:.0f} s")
        if r.returncode != 0:
            print(r.stdout[-4000:], r.stderr[-3000:])
    for name in HAZARDS:
        path = os.path.join(root, "samples", "distributed", "hazards", f"{name}.py")
        exp = markers(path)
        r, data, wall = capture(path, n, f"{name}_{n}", timeout=180)
        time.sleep(2)
        left = leftovers()
        findings = data.get("findings", []) + [f for rk in data.get("ranks", []) for f in
                                                (rk.get("report") or {}).get("findings", [])]
        found = {(f["line"], f["rule"]): f for f in findings}
        hit = [f"{rule}@{ln}" for ln, rule in exp if (ln, rule) in found]
        miss = [f"{rule}@{ln}" for ln, rule in exp if (ln, rule) not in found]
        named = [found[(ln, rule)]["message"][:140] for ln, rule in exp if (ln, rule) in found]
        ok = r.returncode == 1 and not miss and not left and wall < 180
        row(f"distributed hazard {name} ({n} ranks)", ok if n >= 2 or name == "ddp_default_stream" else None,
            f"exit {r.returncode}; found {hit} missing {miss}; wall {wall:.0f} s; leftover processes {left or 'none'}; "
            f"ranks {[(rk['rank'], rk.get('ended'), rk.get('phase'), rk.get('exit')) for rk in data.get('ranks', [])]}; "
            f"messages {named}")
    if n >= 2:
        name = "tensor_parallel"
        r1, _d, wall1 = capture(os.path.join(root, "samples", "distributed", f"{name}.py"), 1, f"{name}_1")
        ratio = walls[(name, n)] / wall1 if wall1 else float("inf")
        row(f"distributed cost: {n}-rank vs 1-rank capture of {name} (< 1.5x)", ratio < 1.5 and r1.returncode == 0,
            f"{walls[(name, n)]:.1f} s vs {wall1:.1f} s wall = {ratio:.2f}x (1-rank exit {r1.returncode})")


def probe(root: str, work: str, n: int, env: dict, row: Callable[[str, bool | None, str], None]) -> None:
    """tools/dist_probe.py under torchrun: capture of all_reduce, its kernel names, one rank's failed capture."""
    folder = os.path.join(work, "probe")
    for fail in (False, True):
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n),
               "tools/dist_probe.py", folder] + (["fail"] if fail else [])
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=150,
                               start_new_session=True)
            code = r.returncode
            tail = (r.stdout + r.stderr)[-800:]
        except subprocess.TimeoutExpired:
            code, tail = "timeout (150 s)", ""
        wall = time.perf_counter() - t0
        time.sleep(1)
        left = leftovers()
        res = []
        for p in sorted(glob.glob(os.path.join(folder, f"probe{'_fail' if fail else ''}.rank*.json"))):
            res.append(json.load(open(p)))
        if not fail:
            nccl_names = sorted({k for d in res for k in d.get("graph_nodes", []) if "nccl" in k.lower()})
            ok = len(res) == n and all(d.get("replay_ok") for d in res)
            row(f"probe: all_reduce captured in torch.cuda.graph on {n} rank(s)", ok,
                f"launcher exit {code}; nccl {res[0].get('nccl') if res else '?'}; replay sums "
                f"{[d.get('replay_sum') for d in res]}; graph nodes {res[0].get('graph_nodes') if res else None}; "
                f"NCCL kernel names {nccl_names}; capturing on capture/other stream "
                f"{[(d.get('capturing_on_capture_stream'), d.get('capturing_on_other_stream')) for d in res]}; "
                f"errors {[d.get('error', '')[-200:] for d in res if d.get('error')]}; wall {wall:.0f} s")
            if not ok:
                print(tail)
        else:
            row(f"probe: one rank's capture fails ({n} rank(s)): how it shows, no hang", None if n < 2 else
                (wall < 150 and not left),
                f"launcher exit {code}, wall {wall:.0f} s; per rank: " + "; ".join(
                    f"rank {d['rank']} phase {d.get('phase')} captured {d.get('captured')} "
                    f"{d.get('capture_error') or d.get('error', '')[-160:]}" for d in res)
                + f"; leftover processes {left or 'none'}")
