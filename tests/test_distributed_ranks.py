"""`cgtool capture --nproc-per-node 2` for real on CPU: two gloo ranks started by torch.distributed.run."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.expect_markers import markers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = os.path.join(ROOT, "samples", "distributed")
pytest.importorskip("torch.distributed.run")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_tensor_parallel_two_ranks_merged(run_cli, tmp_path):
    out = tmp_path / "out"
    r = run_cli("capture", "--nproc-per-node", "2", "--cpu", "--warmup", "2", "--timeout", "120",
                os.path.join(DIST, "tensor_parallel.py"), "--out", out, timeout=150)
    data = json.loads((out / "report.json").read_text())
    assert r.returncode == 3, r.stdout + r.stderr  # both ranks ran on CPU only, as a single CPU run
    assert data["kind"] == "distributed" and data["world_size"] == 2 and data["findings"] == []
    assert "torch.distributed.run" in data["launcher"]
    for rk in data["ranks"]:
        assert rk["report"]["status"] == "cpu-only" and rk["facts"]["backend"] == "gloo"
        assert rk["facts"]["env"]["NCCL_NVLS_ENABLE"] == "0" and rk["facts"]["env"]["NVSHMEM_DISABLE_NVLS"] == "1"
        assert rk["summary"]["collectives"] == {"warmup": 2, "capture": 1}
        assert [c["frame"]["line"] for c in rk["collectives"]] == [27] * 3
        assert (out / f"rank{rk['rank']}" / "report.json").exists()
    assert "2 ranks" in r.stdout


def test_rank_dependent_collective_found_exit_1(run_cli, tmp_path):
    path = os.path.join(DIST, "hazards", "rank_dependent.py")
    line = markers(path)[0][0]
    t0 = time.monotonic()
    r = run_cli("capture", "--nproc-per-node", "2", "--cpu", "--warmup", "2", "--timeout", "120", path, "--json",
                "--out", tmp_path / "o", timeout=150)
    data = json.loads(r.stdout)
    assert r.returncode == 1
    hits = [f for f in data["findings"] if f["rule"] == "CG601"]
    assert hits and hits[0]["line"] == line and "rank 1 calls no collective" in hits[0]["message"]
    assert time.monotonic() - t0 < 120


def test_hang_on_every_rank_is_killed_at_the_timeout(run_cli, tmp_path):
    path = os.path.join(ROOT, "tests", "data", "scripts", "ranks", "hangs_everywhere.py")
    t0 = time.monotonic()
    r = run_cli("capture", "--nproc-per-node", "2", "--cpu", "--warmup", "1", "--timeout", "25", path, "--json",
                "--out", tmp_path / "o", timeout=90)
    wall = time.monotonic() - t0
    data = json.loads(r.stdout)
    assert r.returncode == 4, r.stderr[-2000:]  # a hang cgtool cannot explain: the worker's timeout code
    err = data["errors"][0]
    assert err["type"] == "timeout" and "rank 0 in warmup" in err["message"] and "rank 1 in warmup" in err["message"]
    assert all(rk["ended"] == "stopped" and rk["report"] is None for rk in data["ranks"])
    assert wall < 25 + 20
    pids = [rk["facts"]["pid"] for rk in data["ranks"]]
    assert pids and not any(_alive(p) for p in pids), "a rank outlived cgtool"


def test_under_the_users_torchrun(tmp_path):
    """`torchrun --nproc-per-node 2 -m cgtool capture ...`: each rank runs itself, rank 0 merges."""
    import subprocess
    import sys

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                        "-m", "cgtool", "capture", "--cpu", "--warmup", "2", "--timeout", "120", "-q",
                        os.path.join(DIST, "tensor_parallel.py")], cwd=tmp_path, capture_output=True, text=True,
                       timeout=150, env=dict(os.environ, NO_COLOR="1", TMPDIR=str(tmp)))
    # the test's own torchrun (not cgtool's) keeps its torchelastic_* here, in tmp_path; cgtool leaves nothing
    assert [n for n in os.listdir(tmp) if not n.startswith("torchelastic_")] == []
    data = json.loads((tmp_path / "cgtool-out" / "tensor_parallel" / "report.json").read_text())
    assert data["world_size"] == 2 and data["findings"] == [], r.stdout + r.stderr
    assert [rk["summary"]["collectives"] for rk in data["ranks"]] == [{"warmup": 2, "capture": 1}] * 2
