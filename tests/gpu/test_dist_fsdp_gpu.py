"""FSDP2 beyond the default settings on 2 GPUs (marker multi_gpu), plain PyTorch's answer beside cgtool's:

- torchtitan's "always" resharding (`reshard_after_forward=True` on every block and the root): plain PyTorch
  captures and replays it on torch 2.11, on the warmup stream and on torch.cuda.graph's own; cgtool must too
  (exit 0, both ranks captured, replay matching, no error finding).
- torch.compile(mode="reduce-overhead") of an FSDP2 model: each rank's graph breaks, cudagraph skips and the trees'
  graphs as plain PyTorch sees them (tests/gpu/dist_compiled_truth.py under torchrun), beside cgtool's per-rank
  compile watch: both ranks "compiled" (never "did not capture"), the same breaks at the same line, no CG701 where
  torch skipped nothing, a step time as compiled.
Each row goes to $OUT/dist-rows.txt.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from gpu.runs import read_json, save_artifact
from gpu.test_dist_rows_gpu import ENV, cgtool, plain_words, row, tool_words, truth

pytestmark = [pytest.mark.gpu, pytest.mark.multi_gpu]
DIST = os.path.join(ROOT, "samples", "distributed")


def errors_of(data: dict) -> list[str]:
    return [f"{f['rule']}@{f['line']}" for f in data.get("findings", []) + [
        f for rk in data.get("ranks", []) for f in (rk.get("report") or {}).get("findings", [])] if f["severity"] == "error"]


def test_fsdp2_reshard_always_captures_as_in_plain_pytorch(work, measured):
    path = os.path.join(DIST, "fsdp2_reshard_always.py")
    same, _w1, ranks = truth("reshard_always", path, work, limit=120, extra=("3",))
    own, _w2, ranks_own = truth("reshard_always_own", path, work, limit=120, extra=("3", "own"))
    r, data, wall = cgtool("reshard_always", path, work)
    plain = f"warmup stream: {plain_words(same, ranks)}; own stream: {plain_words(own, ranks_own)}"
    row("fsdp2_reshard_always", plain, tool_words(r, data, wall))
    measured(f"plain {plain} | cgtool {tool_words(r, data, wall)}", step_speedup=(data.get("step") or {}).get("speedup"))
    for ended, rks in ((same, ranks), (own, ranks_own)):
        assert ended == "exit 0" and len(rks) == 2 and all(rk.get("captured") and rk.get("replay_ok") for rk in rks), rks
    summaries = [rk.get("summary", {}) for rk in data.get("ranks", [])]
    assert r.returncode == 0 and not errors_of(data), r.stdout[-4000:] + r.stderr[-2000:]
    assert [s.get("status") for s in summaries] == ["captured"] * 2 and [s.get("replay") for s in summaries] == ["match"] * 2


def compiled_truth(path: str, work: str, steps: int, limit: float = 240) -> tuple[str, list[dict]]:
    folder = os.path.join(work, "dist-rows", "compiled-truth")
    os.makedirs(folder, exist_ok=True)
    for old in glob.glob(os.path.join(folder, "compiled.rank*.json")):
        os.remove(old)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           os.path.join(ROOT, "tests", "gpu", "dist_compiled_truth.py"), path, folder, str(steps)]
    try:
        r = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=limit)
        ended = f"exit {r.returncode}"
        tail = (r.stdout + r.stderr)[-3000:]
    except subprocess.TimeoutExpired:
        ended, tail = f"timeout ({limit:g} s)", ""
    ranks = [read_json(p) or {} for p in sorted(glob.glob(os.path.join(folder, "compiled.rank*.json")))]
    save_artifact("dist-rows-truth.txt", f"===== fsdp2_compiled: {ended}\n{json.dumps(ranks, indent=1)}\n{tail}")
    return ended, ranks


def test_fsdp2_compiled_per_rank_as_plain_pytorch(work, measured):
    path = os.path.join(DIST, "fsdp2_compiled.py")
    t0 = time.perf_counter()
    ended, plain = compiled_truth(path, work, steps=19)  # cgtool's calls of the compiled step: 11 + 8 warmup
    r, data, wall = cgtool("fsdp2_compiled", path, work, timeout=240)
    ranks = data.get("ranks", [])
    compiled = [(rk.get("report") or {}).get("compiled") or {} for rk in ranks]
    tool_breaks = [sorted({f"{(b.get('frame') or {}).get('file')}:{(b.get('frame') or {}).get('line')}"
                           for b in c.get("breaks", [])}) for c in compiled]
    plain_text = "; ".join(f"rank {p.get('rank')}: {p.get('tree_graphs')} tree graphs, {p.get('captures')} captures, "
                           f"{p.get('graph_breaks')} break(s) {p.get('break_lines')}, {p.get('cudagraph_skips')} "
                           f"skips, finite {p.get('finite')}" for p in plain)
    tool_text = (f"exit {r.returncode}, {wall:.1f} s; " + "; ".join(
        f"rank {rk['rank']} {rk.get('summary', {}).get('status')}: {c.get('graphs_recorded')} graphs recorded "
        f"(re-records {[f.get('rerecords') for f in c.get('functions', [])]}), breaks {b}, "
        f"{c.get('kernels_in_graphs')} kernels in graphs" for rk, c, b in zip(ranks, compiled, tool_breaks))
        + f"; rules {sorted({f['rule'] for rk in ranks for f in (rk.get('report') or {}).get('findings', [])})}"
        + f"; step {(data.get('step') or {}).get('speedup') or 0:.2f}x")
    row("fsdp2_compiled", f"{ended}; {plain_text}", tool_text)
    measured(f"plain {ended}; {plain_text} | cgtool {tool_text}", wall_s=round(time.perf_counter() - t0, 1))
    assert ended == "exit 0" and len(plain) == 2 and all(p.get("phase") == "done" and p.get("finite") for p in plain), plain
    assert r.returncode == 0 and not errors_of(data), r.stdout[-4000:] + r.stderr[-2000:]
    assert [rk.get("summary", {}).get("status") for rk in ranks] == ["compiled"] * 2
    assert "did not capture" not in r.stdout and "ran compiled" in r.stdout, r.stdout[-2000:]
    for p, c, b in zip(plain, compiled, tool_breaks):
        assert c.get("observed") and c.get("graphs") and p.get("tree_graphs", 0) > 0, (p, c)
        assert sorted(p["break_lines"]) == b and bool(b) == (p["graph_breaks"] > 0), (p, b)  # the same breaks, lines
        rules = {f["rule"] for rk in ranks for f in (rk.get("report") or {}).get("findings", [])}
        assert ("CG701" in rules) == (p["cudagraph_skips"] > 0), (rules, p)
    assert (data.get("step") or {}).get("speedup")
