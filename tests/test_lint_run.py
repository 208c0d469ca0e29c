"""`cgtool lint` while it runs: Ctrl-C, workers that fork or crash, a step's own KeyboardInterrupt, the default
-j, progress, and an interrupted result in every format."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from lint_samples import ITEM_SYNC, MASK_INDEX, SIDE_STREAM
from procs import gone

from cgtool.lint import run as lint_run
from cgtool.lint.run import LintOptions, default_jobs, lint_paths
from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import finding
from cgtool.render.lint_formats import render_lint

HAZARD = '''import os
import torch

def setup(device):
    with open(os.path.join(os.path.dirname(__file__), "hazard_pid"), "w") as fh:
        fh.write(str(os.getpid()))
    return {"x": torch.ones(2, device=device)}

def step(x):
    return (x * 2).sum().item()
'''
LOOPS = '''import os
import torch

def step():
    with open(os.path.join(os.path.dirname(__file__), "started"), "w") as fh:
        fh.write(str(os.getpid()))
    while True:
        pass
'''


def _write(folder, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write(text)
    return path


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_returns_within_5_s_with_the_findings_so_far(tmp_path, jobs):
    _write(tmp_path, "a_hazard.py", HAZARD)
    _write(tmp_path, "z_loops.py", LOOPS)
    proc = subprocess.Popen([sys.executable, "-m", "cgtool", "lint", str(tmp_path), "--format", "json", "-j", jobs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, NO_COLOR="1"))
    started = tmp_path / "started"
    deadline = time.monotonic() + 240
    while not started.exists() or not started.read_text():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    if jobs == "2":  # the other script's worker has ended (a fixed wait is a race on a loaded 2-core machine)
        hazard = tmp_path / "hazard_pid"
        while not hazard.exists() or not hazard.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert gone(int(hazard.read_text()), timeout=180)
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    elapsed = time.monotonic() - sent
    assert elapsed < 5, elapsed
    assert proc.returncode == 130, stderr
    result = json.loads(stdout)
    assert result["summary"]["interrupted"] is True and result["summary"]["exit_code"] == 130
    assert result["unchecked"] == [str(tmp_path / "z_loops.py")]
    (done,) = result["scripts"]
    assert done["path"].endswith("a_hazard.py") and [f["rule"] for f in done["findings"]] == ["CG101"]
    assert gone(int(started.read_text()))
    assert "Traceback" not in stderr


FORKS = '''import os, subprocess
import torch

def setup(device):
    child = subprocess.Popen(["sleep", "1000"])
    with open(os.path.join(os.path.dirname(__file__), "forked"), "w") as fh:
        fh.write(str(child.pid))
    return {}

def step():
    return torch.ones(2) * 2
'''
RAISES_KEYBOARD_INTERRUPT = '''import torch

def step():
    raise KeyboardInterrupt
'''
PRINTS_THEN_CRASHES = '''import os, signal
import torch

def step():
    print("last words of the step")
    os.kill(os.getpid(), signal.SIGSEGV)
'''


def test_forked_children_crashes_and_a_steps_own_keyboard_interrupt(tmp_path):
    _write(tmp_path, "forks.py", FORKS)
    _write(tmp_path, "keyboard.py", RAISES_KEYBOARD_INTERRUPT)
    _write(tmp_path, "crashes.py", PRINTS_THEN_CRASHES)
    r = subprocess.run([sys.executable, "-m", "cgtool", "lint", str(tmp_path), "--format", "json", "-j", "2"],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, NO_COLOR="1"))
    assert r.returncode == 1, r.stderr
    errors = {os.path.basename(s["path"]): s["errors"] for s in json.loads(r.stdout)["scripts"]}
    assert errors["forks.py"] == []
    assert gone(int((tmp_path / "forked").read_text()))  # the step's child went with its worker
    (kbi,) = errors["keyboard.py"]
    assert "KeyboardInterrupt" in kbi and "keyboard.py:4" in kbi and "SIGINT" not in kbi, kbi
    (crash,) = errors["crashes.py"]
    assert "killed by SIGSEGV" in crash and "the report" not in crash, crash
    assert crash.endswith("The script's last output: last words of the step"), crash


def test_the_scripts_output_starts_after_torchs_import(tmp_path):
    from cgtool.model.job import CAPTURE, CaptureSettings, Job
    from cgtool.worker.client import run_job

    script = _write(tmp_path, "crashes.py", PRINTS_THEN_CRASHES)
    outcome = run_job(Job(CAPTURE, script, "step", settings=CaptureSettings(warmup=2, timing=False)), timeout=240)
    assert outcome.failure == "crash"
    assert outcome.output.strip() == "last words of the step"  # not torch's NumPy warning before it


def test_one_job_runs_in_this_thread_and_reports_progress(tmp_path, monkeypatch):
    threads, progress = [], []

    def fake(path, opts, entry=None, stop=None):
        threads.append(threading.current_thread())
        return ScriptResult(path=path)

    monkeypatch.setattr(lint_run, "lint_one", fake)
    for name in ("a.py", "b.py"):
        _write(tmp_path, name, "def step():\n    pass\n")
    result = lint_paths([str(tmp_path)], LintOptions(jobs=1), lambda *a: progress.append(a))
    assert threads == [threading.main_thread()] * 2 and len(result.scripts) == 2
    assert [p[:2] for p in progress] == [(0, 2), (1, 2), (2, 2)]


def test_a_pool_stops_its_workers_when_interrupted(tmp_path, monkeypatch):
    """Ctrl-C reaches only the main thread: it sets `stop`, each worker thread stops, finished results stay."""
    started = threading.Barrier(3)

    def fake(path, opts, entry=None, stop=None):
        if path.endswith("a.py"):
            return ScriptResult(path=path)
        started.wait()
        while not stop.is_set():
            time.sleep(0.01)
        return None  # what lint_one returns for an interrupted worker

    monkeypatch.setattr(lint_run, "lint_one", fake)
    for name in ("a.py", "b.py", "c.py"):
        _write(tmp_path, name, "def step():\n    pass\n")
    threading.Timer(0.5, lambda: (started.wait(), signal.raise_signal(signal.SIGINT))).start()
    t0 = time.monotonic()
    result = lint_paths([str(tmp_path)], LintOptions(jobs=3))
    assert time.monotonic() - t0 < 5
    assert result.interrupted and [os.path.basename(s.path) for s in result.scripts] == ["a.py"]
    assert sorted(map(os.path.basename, result.unchecked)) == ["b.py", "c.py"] and result.exit_code == 130


def test_default_jobs_uses_the_machine_within_memory():
    n = default_jobs()
    assert 1 <= n <= min(len(os.sched_getaffinity(0)), lint_run.MAX_DEFAULT_JOBS)


def test_default_jobs_is_capped_by_memory(monkeypatch):
    monkeypatch.setattr(lint_run, "_available_memory", lambda: int(2.5 * lint_run.WORKER_MEMORY))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert default_jobs() == 2


def test_progress_is_a_bar_on_a_terminal_and_nothing_otherwise():
    from cgtool.render.lint_progress import lint_progress

    with lint_progress(False) as update:
        assert update is None
    with lint_progress(True) as update:
        update(0, 3, "")
        update(1, 3, "samples/a.py")


def test_an_interrupted_run_in_every_format():
    r = LintResult([ScriptResult(ITEM_SYNC, findings=[finding("CG101", file=ITEM_SYNC, line=1)])],
                   interrupted=True, unchecked=[MASK_INDEX, SIDE_STREAM])
    data = json.loads(render_lint(r, "json"))
    assert data["summary"]["interrupted"] and data["unchecked"] == [MASK_INDEX, SIDE_STREAM]
    assert data["summary"]["exit_code"] == 130 and LintResult.from_json(data).interrupted
    invocation = json.loads(render_lint(r, "sarif"))["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 130
    assert any("interrupted" in n["message"]["text"] for n in invocation["toolExecutionNotifications"])
    junit = render_lint(r, "junit")
    assert junit.count("not checked: the run was interrupted") == 2
    github = render_lint(r, "github")
    assert "title=cgtool lint was interrupted (Ctrl-C)::2 script(s) not checked" in github
    assert "interrupted (Ctrl-C): 2 scripts not checked" in render_lint(r, "text")
    gitlab = json.loads(render_lint(r, "gitlab"))
    assert [i["check_name"] for i in gitlab] == ["CG101", "cgtool/not-checked", "cgtool/not-checked"]
    assert gitlab[1]["description"] == "not checked: the run was interrupted (Ctrl-C)"
