"""Faults while a script runs (CPU): the worker killed by SIGKILL, SIGTERM or SIGINT at each phase it reaches
(load, setup, warmup), the output disk full, the output folder gone or read-only mid-run. Always: the report
or a clear error, no half-written file, no orphaned process, a documented exit code.

The GPU phases (capture, replay check, timing): tests/gpu/test_faults_gpu.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from procs import gone

from cgtool.model.job import CAPTURE, CaptureSettings, Job
from cgtool.model.report import WORKER_FAILED
from cgtool.worker.client import report_from_outcome, run_job

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULT_SCRIPT = os.path.join(ROOT, "tests", "data", "faults", "stop_in_phase.py")
SCRIPTS = os.path.join(ROOT, "tests", "data", "scripts")
SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
STOPS = {"load": "load", "setup": "setup", "warmup": "call:2"}  # phase -> where the script waits


def fault_copy(folder, at: str) -> str:
    """The fault script in its own folder, told where to stop (fault_at.txt beside it)."""
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "stop_in_phase.py")
    shutil.copy(FAULT_SCRIPT, script)
    with open(os.path.join(folder, "fault_at.txt"), "w") as fh:
        fh.write(at + "\n")
    return script


def wait_for_pids(folder, timeout: float = 180.0) -> tuple[int, int]:
    """(worker pid, pid of the `sleep` it forked) once the script stopped where it was told."""
    path = os.path.join(folder, "pids")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            worker, child = open(path).read().split()
            return int(worker), int(child)
        time.sleep(0.05)
    raise AssertionError(f"the script never stopped in its phase ({path})")


def error_line(stderr: str) -> str:
    """The one `error:` line on stderr (capture logs its phases there too); no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and stderr.rstrip().endswith(errors[0]), stderr
    return errors[0]


def no_temp_files(folder) -> bool:
    return not [p for p in os.listdir(folder) if p.startswith(".")]


def test_the_worker_killed_at_each_phase_by_each_signal(tmp_path):
    """A worker per phase, each killed by another signal, at once, through the client capture and lint use: each
    ends as a clean report that names the signal and the phase, and nothing the script forked survives. (The worker
    leaves all three signals at their default, killing, action in every phase — worker/child.py — so the phase a
    report names and the signal it names are independent: each phase and each signal once, not all nine pairs.)"""
    cases = list(zip(STOPS, SIGNALS))
    assert len(cases) == len(STOPS) == len(SIGNALS)
    seen: dict = {}

    def run(phase: str, sig: signal.Signals) -> None:
        folder = tmp_path / f"{phase}-{sig.name}"
        job = Job(CAPTURE, fault_copy(folder, STOPS[phase]), "step",
                  settings=CaptureSettings(warmup=3, timing=False, checks=True, replay_check=True))
        pids: list[int] = []

        def kill() -> None:
            pids.extend(wait_for_pids(folder))
            os.kill(pids[0], sig)

        killer = threading.Thread(target=kill)
        killer.start()
        outcome = run_job(job, timeout=300)
        killer.join()
        seen[phase, sig] = (outcome, report_from_outcome(job, outcome), pids)

    threads = [threading.Thread(target=run, args=case) for case in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for phase, sig in cases:
        outcome, report, (worker, child) = seen[phase, sig]
        assert outcome.failure == "crash", (phase, sig, outcome.message)
        assert f"during the {phase} phase ({'killed by ' + sig.name})" in outcome.message, outcome.message
        assert report.status == WORKER_FAILED and report.errors[0].type == "crash"
        assert "the report" not in outcome.message  # lint writes none
        assert gone(worker) and gone(child), (phase, sig, "an orphaned process")


def _start(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cgtool", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, NO_COLOR="1"), **kw)


def test_capture_killed_by_sigterm_in_setup_keeps_a_report(tmp_path):
    script = fault_copy(tmp_path / "s", "setup")
    out = tmp_path / "out"
    proc = _start(["capture", script, "--out", str(out)])
    worker, child = wait_for_pids(tmp_path / "s")
    os.kill(worker, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 4, stdout + stderr
    assert "killed by SIGTERM" in stdout and "during the setup phase" in stdout
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "worker-failed" and report["errors"][0]["phase"] == "setup"
    assert no_temp_files(out) and gone(child)
    assert "Traceback" not in stdout + stderr


def test_lint_names_the_signal_and_phase_and_leaves_no_process(tmp_path):
    script = fault_copy(tmp_path / "s", "call:2")
    proc = _start(["lint", script, "--format", "json"])
    worker, child = wait_for_pids(tmp_path / "s")
    os.kill(worker, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stdout + stderr
    (error,) = json.loads(stdout)["scripts"][0]["errors"]
    assert "killed by SIGKILL" in error and "during the warmup phase" in error and "out of memory" in error
    assert "the report" not in error and "\n" not in error
    assert gone(child)


def _fill(folder, leave: int = 2048) -> None:
    """Fill the disk holding `folder` until about `leave` bytes are free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(os.path.join(folder, "filler"), "wb") as fh:
        try:
            fh.write(b"\0" * max(0, free - leave))
        except OSError:
            pass


def test_capture_on_a_full_disk_shows_the_report_keeps_the_old_one_and_exits_3(run_cli, tiny_disk):
    out = tiny_disk / "out"
    out.mkdir()
    (out / "report.json").write_text("the old report\n")
    _fill(tiny_disk)
    r = run_cli("capture", os.path.join(SCRIPTS, "good_tuple.py"), "--out", out, "--no-timing")
    assert r.returncode == 3, r.stdout + r.stderr
    line = error_line(r.stderr)
    assert "No space left on device" in line and "was not saved" in line
    assert "CPU analysis" in r.stdout  # the run's result is shown, not lost
    assert (out / "report.json").read_text() == "the old report\n" and no_temp_files(out)


def test_lint_output_on_a_full_disk_keeps_the_old_file(run_cli, tiny_disk, tmp_path):
    target = tiny_disk / "lint.txt"
    target.write_text("old findings\n")
    _fill(tiny_disk, leave=0)
    r = run_cli("lint", os.path.join(SCRIPTS, "good_tuple.py"), "-o", target)
    assert r.returncode == 3 and "No space left on device" in error_line(r.stderr), r.stdout + r.stderr
    assert target.read_text() == "old findings\n" and no_temp_files(tiny_disk)


SPOILER = '''
import os, shutil, subprocess
import torch

def setup(device):
    out = os.environ["SPOIL_OUT"]
    if os.environ["SPOIL_HOW"] == "gone":  # the folder removed and a file put in its place
        shutil.rmtree(out)
        open(out, "w").close()
    else:  # the folder's file system made read-only
        subprocess.run(["mount", "-o", "remount,ro", out], check=True)
    return {"w": torch.ones(2)}

def step(w):
    return w * 2
'''


@pytest.mark.parametrize("how", ["gone", "read-only"])
def test_output_folder_spoiled_mid_run_is_a_clear_error(tmp_path, how):
    script = tmp_path / "spoil.py"
    script.write_text(SPOILER)
    out = tmp_path / "out"
    out.mkdir()
    if how == "read-only":
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(out)], capture_output=True)
        if r.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        r = subprocess.run([sys.executable, "-m", "cgtool", "capture", str(script), "--out", str(out)],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, NO_COLOR="1", SPOIL_OUT=str(out), SPOIL_HOW=how))
    finally:
        if how == "read-only":
            subprocess.run(["umount", "-l", str(out)], check=False)
    assert r.returncode == 3, r.stdout + r.stderr
    assert error_line(r.stderr).startswith("error: Cannot write")
    assert "CPU analysis" in r.stdout and "wrote" not in r.stdout
