"""Nothing left running, nothing left in $TMPDIR (issue 23): cgtool itself stopped by SIGTERM, SIGHUP or SIGKILL
while a worker, or torch.distributed.run and its ranks, run a step that started processes of its own in new
sessions; every run gets its own $TMPDIR, which must be empty afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from procs import gone

from cgtool.worker.launch import descendants

# a step that starts `sleep` in a new session (out of cgtool's process groups), writes its pid, then waits
SLEEPER = '''import os, subprocess, time
def step():
    p = subprocess.Popen(["sleep", "1001"], start_new_session=True)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids.txt"), "a") as fh:
        fh.write(f"{p.pid}\\n")
    time.sleep(float(os.environ.get("STEP_S", "0")))
'''


def start(tmp_path, *args, step_s: float = 60.0) -> tuple[subprocess.Popen, str]:
    (tmp_path / "s.py").write_text(SLEEPER)
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, NO_COLOR="1", TMPDIR=str(tmp), STEP_S=str(step_s))
    proc = subprocess.Popen([sys.executable, "-m", "cgtool", *args, str(tmp_path / "s.py")], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, str(tmp)


def wait_for_sleepers(tmp_path, n: int, timeout: float = 90.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = _pids(tmp_path)
        if len(pids) >= n:
            return pids
        time.sleep(0.2)
    pytest.fail("the step never started its processes")


def _pids(tmp_path) -> list[int]:
    try:
        return [int(x) for x in (tmp_path / "pids.txt").read_text().split()]
    except (OSError, ValueError):
        return []


def assert_clean(tmp_path, tmp: str, tree: list[int]) -> None:
    for pid in [*tree, *_pids(tmp_path)]:
        assert gone(pid, timeout=15), f"process {pid} outlived cgtool"
    time.sleep(0.5)
    assert os.listdir(tmp) == [], f"left in $TMPDIR: {os.listdir(tmp)}"


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_report_like_ctrl_c(tmp_path, sig, code):
    proc, tmp = start(tmp_path, "capture", "--warmup", "1", "--out", "o")
    wait_for_sleepers(tmp_path, 1)
    tree = descendants(proc.pid)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err[-2000:]
    assert f"Interrupted ({sig.name})" in out and (tmp_path / "o" / "report.json").exists()
    assert_clean(tmp_path, tmp, tree)


def test_sigkill_of_cgtool_ends_the_worker_and_what_the_step_started(tmp_path):
    proc, tmp = start(tmp_path, "capture", "--warmup", "1", "--out", "o")
    wait_for_sleepers(tmp_path, 1)
    tree = descendants(proc.pid)
    proc.kill()
    proc.communicate(timeout=30)
    assert_clean(tmp_path, tmp, tree)


def test_new_session_processes_of_a_finished_step_end_with_the_worker(tmp_path):
    proc, tmp = start(tmp_path, "capture", "--warmup", "2", "--out", "o", step_s=0)
    proc.communicate(timeout=120)
    assert proc.returncode == 3 and len(_pids(tmp_path)) >= 2
    assert_clean(tmp_path, tmp, [])


def test_timeout_ends_what_the_step_started(tmp_path):
    proc, tmp = start(tmp_path, "capture", "--warmup", "1", "--timeout", "8", "--out", "o")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 4 and "time limit of 8 s" in out
    assert_clean(tmp_path, tmp, [])


# SIGTERM runs each command's own stopping code (capture's and lint's differ); after SIGKILL nothing of cgtool's runs
# and the launcher and ranks end by themselves (worker/lifetime.py), whichever command started them: capture's only
@pytest.mark.parametrize("command, sig", [("capture", signal.SIGTERM), ("lint", signal.SIGTERM),
                                          ("capture", signal.SIGKILL)])
def test_ranks_and_launcher_end_with_cgtool(tmp_path, sig, command):
    args = ["capture", "--out", "o"] if command == "capture" else ["lint"]
    proc, tmp = start(tmp_path, *args, "--cpu", "--nproc-per-node", "2", "--warmup", "2", "--timeout", "120")
    wait_for_sleepers(tmp_path, 2)
    tree = descendants(proc.pid)
    assert any("torch.distributed.run" in _cmdline(p) for p in tree)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGTERM:
        assert proc.returncode == 143, err[-2000:]
    assert_clean(tmp_path, tmp, tree)


def test_nproc_beyond_the_machine_is_refused_with_the_reason(tmp_path):
    proc, tmp = start(tmp_path, "capture", "--cpu", "--nproc-per-node", "1000")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "more ranks than this machine can hold" in err and "CPU" in err
    assert _pids(tmp_path) == [] and os.listdir(tmp) == []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


RACE = """
import subprocess, threading, time
from cgtool.worker import lifetime

started, box = threading.Event(), []

def spawn():
    proc = subprocess.Popen(["sleep", "30"])
    started.set()
    time.sleep(0.5)  # forked, not yet known as a worker: another thread's reaped() runs now
    return proc

t = threading.Thread(target=lambda: box.append(lifetime.start(spawn)))
t.start()
started.wait(10)
lifetime.reaped(-1)  # another worker ended: the children this process does not know are ended
t.join()
alive = box[0].poll() is None
box[0].kill()
box[0].wait()
print("alive" if alive else "killed")
"""


def test_a_worker_being_started_is_never_taken_for_an_orphan():
    """lint -j 2 on CI: one thread's reaped() ended the worker another thread had just forked (exit status 0, no
    result, in start-up): starting a worker and knowing it as one are one step now (lifetime.start)."""
    r = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.stdout.strip() == "alive", r.stdout + r.stderr
