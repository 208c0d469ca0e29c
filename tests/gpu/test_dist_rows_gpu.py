"""Issue 35's table on 2 GPUs (marker multi_gpu): each distributed step as real training runs it, plain PyTorch's
answer beside cgtool's. Plain PyTorch first (tests/gpu/dist_rows_truth.py under torchrun: warmup on a side stream,
torch.cuda.graph, replay against eager on local shards, speedup), then `cgtool capture --nproc-per-node 2` on the
same sample. Each row's line (verdict, replay, speedup, both sides) goes to $OUT/dist-rows.txt.

- FSDP2 training and DTensor tensor parallel: where plain PyTorch captures and replays correctly on both ranks,
  cgtool must too: exit 0, both ranks captured, replay matching, no error finding (a CPU-side stream finding the
  capture contradicts is refuted), a speedup.
- Only rank 0 calls all_reduce: plain PyTorch hangs; cgtool names the line (CG601) on both ranks' account within
  15 s of launch and leaves nothing running.
- barrier() in the step: plain PyTorch's capture fails at that line; cgtool says CG608 there, confirmed.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from expect_markers import markers
from gpu.runs import read_json, save_artifact

pytestmark = [pytest.mark.gpu, pytest.mark.multi_gpu]
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
ENV = dict(os.environ, NO_COLOR="1", COLUMNS="200", **MULTICAST_OFF)
DIST = os.path.join(ROOT, "samples", "distributed")


def truth(name: str, path: str, work: str, limit: float, extra: tuple[str, ...] = ()) -> tuple[str, float, list[dict]]:
    """Plain PyTorch under torchrun: (how it ended, wall s, each rank's record); `extra`: dist_rows_truth.py's
    optional arguments (WARMUP, own). A run past `limit` is a hang: the launcher's group and every rank (by the pid
    it wrote) are killed."""
    folder = os.path.join(work, "dist-rows", name)
    os.makedirs(folder, exist_ok=True)
    for old in glob.glob(os.path.join(folder, "truth.rank*.json")):
        os.remove(old)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           os.path.join(ROOT, "tests", "gpu", "dist_rows_truth.py"), path, folder, *extra]
    log_path = os.path.join(folder, "torchrun.log")
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:  # a file, not a pipe: a hung rank keeps a pipe open after its launcher died
        proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc.wait(timeout=limit)
        ended = f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        ended = f"hung (killed after {limit:g} s)"
    wall = time.perf_counter() - t0
    ranks = [read_json(p) or {} for p in sorted(glob.glob(os.path.join(folder, "truth.rank*.json")))]
    if ended.startswith("hung"):  # the ranks run in their own sessions: end each by the pid it wrote, then the launcher
        for pid in [int(rk["pid"]) for rk in ranks if rk.get("pid")]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(timeout=30)
    with open(log_path, "rb") as fh:
        out = fh.read()
    save_artifact("dist-rows-truth.txt", f"===== {name}: {ended}, {wall:.1f} s\n{json.dumps(ranks, indent=1)}\n"
                  f"{out.decode(errors='replace')[-3000:]}")
    return ended, wall, ranks


def cgtool(name: str, path: str, work: str, timeout: int = 120) -> tuple[subprocess.CompletedProcess, dict, float]:
    out = os.path.join(work, "dist-rows", f"{name}-cgtool")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "cgtool", "capture", path, "--nproc-per-node", "2", "--timeout",
                        str(timeout), "--out", out], capture_output=True, text=True, cwd=ROOT, env=ENV,
                       timeout=timeout + 60)
    wall = time.perf_counter() - t0
    save_artifact("dist-rows-cgtool.txt", f"===== {name}: exit {r.returncode}, {wall:.1f} s\n{r.stdout}{r.stderr[-4000:]}")
    return r, read_json(os.path.join(out, "report.json")) or {}, wall


def leftovers() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,etimes,args"], capture_output=True, text=True).stdout
    keys = ("cgtool.worker.rank_child", "torch.distributed.run", "dist_rows_truth.py")
    return [ln.strip() for ln in out.splitlines() if any(k in ln for k in keys) and "ps -eo" not in ln]


def row(name: str, plain: str, tool: str) -> None:
    line = f"| {name} | {plain} | {tool} |"
    print(line)
    save_artifact("dist-rows.txt", line)


def plain_words(ended: str, ranks: list[dict]) -> str:
    if ended.startswith("hung"):
        return f"{ended}; " + ", ".join(f"rank {r.get('rank')} in {r.get('phase')}" for r in ranks)
    parts = []
    for r in ranks:
        if r.get("captured"):
            parts.append(f"rank {r['rank']} captured{' (output never waited)' if r.get('unwaited_output') else ''}, "
                         f"replay {'matches' if r.get('replay_ok') else 'DIFFERS'} "
                         f"(max abs {r.get('max_abs', 0):.2g} over {r.get('compared')} tensors), "
                         f"{r.get('speedup') or 0:.1f}x")
        else:
            parts.append(f"rank {r.get('rank')} {r.get('phase')}: {r.get('capture_error') or r.get('error', '')[-200:]}"
                         + (f" at line {r['capture_line']}" if r.get("capture_line") else ""))
    return f"{ended}; " + "; ".join(parts)


def tool_words(r: subprocess.CompletedProcess, data: dict, wall: float) -> str:
    ranks = data.get("ranks", [])
    each = ", ".join(f"rank {rk['rank']} {rk.get('summary', {}).get('status')} replay {rk.get('summary', {}).get('replay')}"
                     for rk in ranks)
    errs = sorted({f"{f['rule']}@{f['line']}" for f in data.get("findings", []) +
                   [f for rk in ranks for f in (rk.get("report") or {}).get("findings", [])] if f["severity"] == "error"})
    speed = (data.get("step") or {}).get("speedup")
    return (f"exit {r.returncode}, {wall:.1f} s; {each}; error findings {errs or 'none'}; "
            f"step speedup {speed:.1f}x" if speed else f"exit {r.returncode}, {wall:.1f} s; {each}; "
            f"error findings {errs or 'none'}")


@pytest.mark.parametrize("name", ["fsdp2_train", "dtensor_tp"])
def test_clean_row_plain_pytorch_and_cgtool_agree(name, work, measured):
    path = os.path.join(DIST, f"{name}.py")
    ended, _twall, ranks = truth(name, path, work, limit=120)
    r, data, wall = cgtool(name, path, work)
    row(name, plain_words(ended, ranks), tool_words(r, data, wall))
    measured(f"plain {plain_words(ended, ranks)} | cgtool {tool_words(r, data, wall)}",
             step_speedup=(data.get("step") or {}).get("speedup"))
    assert ended == "exit 0" and len(ranks) == 2 and all(rk.get("captured") and rk.get("replay_ok") for rk in ranks), ranks
    # plain PyTorch captures and replays correctly: 0 false errors from cgtool
    summaries = [rk.get("summary", {}) for rk in data.get("ranks", [])]
    errors = [f for f in data.get("findings", []) + [f for rk in data.get("ranks", [])
                                                     for f in (rk.get("report") or {}).get("findings", [])]
              if f["severity"] == "error"]
    assert r.returncode == 0 and not errors, r.stdout[-4000:] + r.stderr[-2000:]
    assert [s.get("status") for s in summaries] == ["captured"] * 2 and [s.get("replay") for s in summaries] == ["match"] * 2
    assert (data.get("step") or {}).get("speedup")
    if any(rk.get("unwaited_output") for rk in ranks):  # DTensor TP's output: its all-reduce's wait is not captured
        cg610 = [f for rk in data.get("ranks", []) for f in (rk.get("report") or {}).get("findings", [])
                 if f["rule"] == "CG610"]
        assert len(cg610) == 2, cg610  # one per rank
    assert not leftovers()


def test_only_rank_zero_calls_all_reduce_named_in_seconds(work, measured):
    path = os.path.join(DIST, "hazards", "only_rank_zero.py")
    line = markers(path)[0][0]
    ended, _twall, ranks = truth("only_rank_zero", path, work, limit=12)
    r, data, wall = cgtool("only_rank_zero", path, work)
    time.sleep(1)
    left = leftovers()
    row("only_rank_zero", plain_words(ended, ranks), tool_words(r, data, wall) + f"; launch {data.get('wall_s', 0):.1f} s")
    hits = [f for f in data.get("findings", []) if f["rule"] == "CG601"]
    measured(f"plain {ended}; cgtool exit {r.returncode}, CG601 {[(f['line'], f['message']) for f in hits]}",
             wall_s=round(wall, 1), launch_s=data.get("wall_s"))
    assert ended.startswith("hung"), ranks  # plain PyTorch: rank 0 waits forever in warmup
    assert r.returncode == 1 and hits and hits[0]["line"] == line, r.stdout[-4000:]
    assert "rank 0 calls all_reduce" in hits[0]["message"] and "rank 1 " in hits[0]["message"]
    assert data.get("wall_s", 99) < 15, data.get("wall_s")
    assert not left, left


def test_barrier_in_the_step_is_cg608_where_plain_capture_fails(work, measured):
    path = os.path.join(DIST, "hazards", "barrier_in_step.py")
    line = markers(path)[0][0]
    ended, _twall, ranks = truth("barrier_in_step", path, work, limit=60)
    r, data, wall = cgtool("barrier_in_step", path, work)
    row("barrier_in_step", plain_words(ended, ranks), tool_words(r, data, wall))
    hits = [f for f in data.get("findings", []) if f["rule"] == "CG608"]
    generic = [f for rk in data.get("ranks", []) for f in (rk.get("report") or {}).get("findings", [])
               if f["rule"] == "CG501" and f["line"] == line]
    measured(f"plain {plain_words(ended, ranks)}; cgtool CG608 {[(f['line'], f.get('evidence')) for f in hits]}")
    # plain PyTorch: capture fails on every rank, but not at the barrier's line: the barrier's own error is swallowed
    # and the capture ends in the generic "operation failed due to a previous error during capture" at the end of
    # `with torch.cuda.graph(...)` (2x H200, torch 2.11: capture_line None on both ranks) — the line is cgtool's to give
    assert ranks and all(rk.get("captured") is False and rk.get("capture_line") in (None, line) for rk in ranks), ranks
    assert r.returncode == 1 and hits and hits[0]["line"] == line and hits[0].get("evidence") == "confirmed", r.stdout[-4000:]
    assert not generic
