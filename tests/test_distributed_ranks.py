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
    # found as it happened (the ranks compare their collectives through the store): both ranks' lines named
    assert hits and hits[0]["line"] == line and "diverge at collective #2" in hits[0]["message"], data["findings"]
    assert f"rank 0 calls all_reduce(float32[16,256]) at rank_dependent.py:{line}" in hits[0]["message"]
    assert "rank 1 calls all_reduce(float32[16,256]) at rank_dependent.py:" in hits[0]["message"]
    assert not [f for f in data["findings"] if f["rule"] == "CG603"]  # stopped by cgtool, not failed by itself
    assert any(rk["divergence"] for rk in data["ranks"])
    assert time.monotonic() - t0 < 60


def test_a_collective_no_other_rank_calls_stops_every_rank_in_seconds(run_cli, tmp_path):
    """Only rank 0 enters an all_reduce; rank 1 goes on to the end of warmup and capture. cgtool names the line
    as it happens (not at the collective timeout, 100 s here: a quarter of --timeout), and leaves no rank running.
    (14 s on an idle 2-core machine; the bound leaves room for a loaded one.)"""
    path = os.path.join(DIST, "hazards", "only_rank_zero.py")
    line = markers(path)[0][0]
    t0 = time.monotonic()
    r = run_cli("capture", "--nproc-per-node", "2", "--cpu", "--warmup", "2", "--timeout", "400", path, "--json",
                "--out", tmp_path / "o", timeout=450)
    wall = time.monotonic() - t0
    data = json.loads(r.stdout)
    assert r.returncode == 1
    hits = [f for f in data["findings"] if f["rule"] == "CG601"]
    assert hits and hits[0]["line"] == line, data["findings"]
    assert "rank 1 finished warmup and capture after 0 collectives and never calls it" in hits[0]["message"]
    assert wall < 90, wall  # found well before the collective timeout
    assert any(rk["divergence"] for rk in data["ranks"]), data["ranks"]  # found by either side, as it happened
    pids = [rk["facts"].get("pid") for rk in data["ranks"] if rk["facts"].get("pid")]
    assert pids and not any(_alive(p) for p in pids), "a rank outlived cgtool"


def test_barrier_inside_the_step_is_named_at_its_line(run_cli, tmp_path):
    path = os.path.join(DIST, "hazards", "barrier_in_step.py")
    line = markers(path)[0][0]
    r = run_cli("capture", "--nproc-per-node", "2", "--cpu", "--warmup", "2", "--timeout", "120", path, "--json",
                "--out", tmp_path / "o", timeout=150)
    data = json.loads(r.stdout)
    hits = [f for f in data["findings"] if f["rule"] == "CG608"]
    assert r.returncode == 1 and hits and hits[0]["line"] == line and "barrier()" in hits[0]["message"], data["findings"]


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


def test_two_torchrun_agents_with_their_own_temp_folders_give_one_report(tmp_path):
    """Two "hosts": two torchrun agents (one rank each) meeting through a c10d rendezvous, each with its own TMPDIR
    and working folder. The ranks hand their results to rank 0 through torchrun's store (no shared folder): one
    merged report with both ranks' own reports, and nothing left in either temp folder."""
    import socket
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    procs = []
    for host in (0, 1):
        (tmp_path / f"tmp{host}").mkdir()
        (tmp_path / f"cwd{host}").mkdir()
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"two-hosts-{port}",
               "--max-restarts", "0", "-m", "cgtool", "capture", "--cpu", "--warmup", "2", "--timeout", "120", "-q",
               os.path.join(DIST, "tensor_parallel.py")]
        env = dict(os.environ, NO_COLOR="1", TMPDIR=str(tmp_path / f"tmp{host}"), PYTHONPATH=ROOT)
        procs.append(subprocess.Popen(cmd, cwd=tmp_path / f"cwd{host}", env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=200)[0] for p in procs]
    reports = [tmp_path / f"cwd{h}" / "cgtool-out" / "tensor_parallel" / "report.json" for h in (0, 1)]
    written = [r for r in reports if r.exists()]
    assert len(written) == 1, outs  # rank 0's host writes the merged report
    data = json.loads(written[0].read_text())
    assert data["world_size"] == 2 and data["findings"] == [], outs
    assert [rk["ended"] for rk in data["ranks"]] == ["finished", "finished"]
    assert [rk["report"]["status"] for rk in data["ranks"]] == ["cpu-only", "cpu-only"]
    assert [rk["summary"]["collectives"] for rk in data["ranks"]] == [{"warmup": 2, "capture": 1}] * 2
    for host in (0, 1):  # each host's own temp folder: no run folder of cgtool's left (torch's caches may stay)
        assert [n for n in os.listdir(tmp_path / f"tmp{host}") if n.startswith("cgtool")] == [], host


RAISES_ON_RANK_1 = '''import torch
import torch.distributed as dist


def setup(device, rank, world_size):
    return {"w": torch.randn(8, 8, device=device), "rank": rank}


def inputs(i, device):
    return {"x": torch.randn(4, 8, device=device)}


def step(w, rank, x):
    y = x @ w
    dist.all_reduce(y)
    if rank == 1:
        raise ValueError("rank 1 raised")
    return y
'''


def test_a_world_whose_script_raised_keeps_the_existing_report(run_cli, tmp_path):
    """A rank's script raised: the run did not complete, so an existing report.json (and report.html) is kept and
    this run's merged report goes beside it as report.failed.json (it replaced report.json)."""
    script = tmp_path / "raises.py"
    script.write_text(RAISES_ON_RANK_1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("earlier\n")
    r = run_cli("capture", "--nproc-per-node", "2", "--cpu", "--warmup", "1", "--timeout", "120", script,
                "--out", out, "-q", timeout=150)
    assert r.returncode == 1, r.stdout + r.stderr
    assert (out / "report.json").read_text() == "earlier\n"
    failed = json.loads((out / "report.failed.json").read_text())
    assert failed["kind"] == "distributed" and failed["ranks"][1]["report"]["status"] == "script-error"
    assert "report.failed.json" in r.stderr, r.stderr


def test_html_on_ranks_is_checked_before_any_rank_starts(run_cli, tmp_path):
    """`bench --nproc-per-node 2 --html PATH` checked PATH only after the ranks ran (and wrote their folder)."""
    r = run_cli("bench", "--nproc-per-node", "2", os.path.join(DIST, "tensor_parallel.py"),
                "--html", tmp_path / "missing" / "page.html", timeout=60)
    assert r.returncode == 3 and "Cannot write --html" in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "cgtool-out").exists()  # no output folder made, no rank started


def test_bench_options_the_ranks_do_not_use_are_a_usage_error(run_cli, tmp_path):
    """`bench --nproc-per-node 2 --out x.json` (--plot, --compare, --fail-if-slower, --sizes) were dropped in silence:
    the run on ranks writes the merged report only."""
    r = run_cli("bench", "--nproc-per-node", "2", os.path.join(DIST, "tensor_parallel.py"), "--out", tmp_path / "b.json",
                "--sizes", "1,2", timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--out, --sizes are not supported on ranks yet" in r.stderr
    assert not (tmp_path / "cgtool-out").exists() and not (tmp_path / "b.json").exists()
