"""The worker killed by SIGKILL, SIGTERM and SIGINT in each GPU phase (capture, replay check, timing) of
`cgtool capture`: exit 4, a report naming the signal and the phase, nothing left running. The nine runs go at
once (a tiny step each, about 20-40 s). CPU phases (load, setup, warmup): tests/test_faults.py."""

import json
import os
import shutil
import signal as signals
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT
from procs import gone

pytestmark = pytest.mark.gpu
FAULT_STOPS = {  # GPU phase -> where tests/data/faults/stop_in_phase.py waits (3 warmup calls come first)
    "capture": "capturing",  # the step's call while the stream captures (call 4)
    "replay-check": "call:5",  # the replay check's first eager call on fresh inputs (it makes two: eager vs eager)
    "timing": "call:7",  # the first eager call of the quick timing (after the replay check's two)
}
SIGNALS = (signals.SIGKILL, signals.SIGTERM, signals.SIGINT)
CASES = [(phase, sig) for phase in FAULT_STOPS for sig in SIGNALS]


def fault_run(phase: str, sig: int, work: str) -> dict:
    """`cgtool capture` of the fault script, its worker signalled once it waits in `phase`."""
    folder = tempfile.mkdtemp(prefix=f"fault-{phase}-{sig}-", dir=work)
    script = shutil.copy(os.path.join(ROOT, "tests", "data", "faults", "stop_in_phase.py"), folder)
    with open(os.path.join(folder, "fault_at.txt"), "w") as fh:
        fh.write(FAULT_STOPS[phase] + "\n")
    out = os.path.join(folder, "out")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cgtool", "capture", script, "--out", out], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ, NO_COLOR="1"))
    pids_path = os.path.join(folder, "pids")
    while not os.path.exists(pids_path) and proc.poll() is None and time.perf_counter() - t0 < 120:
        time.sleep(0.05)
    if not os.path.exists(pids_path):
        proc.kill()
        stdout, stderr = proc.communicate()
        return {"stopped": False, "output": stdout[-300:] + stderr[-300:], "exit": proc.returncode}
    with open(pids_path) as fh:
        worker, child = (int(p) for p in fh.read().split())
    os.kill(worker, sig)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    try:
        with open(os.path.join(out, "report.json")) as fh:
            report = json.load(fh)
    except (OSError, ValueError):
        report = {}
    return {"stopped": True, "exit": proc.returncode, "stdout": stdout, "stderr": stderr, "report": report,
            "leftovers": [p for p in os.listdir(out) if p.startswith(".")] if os.path.isdir(out) else [],
            "worker_gone": gone(worker), "child_gone": gone(child), "wall_s": time.perf_counter() - t0}


@pytest.fixture(scope="module")
def fault_runs(work):
    with ThreadPoolExecutor(len(CASES)) as pool:
        return dict(zip(CASES, pool.map(lambda c: fault_run(*c, work), CASES)))


@pytest.mark.parametrize("phase,sig", CASES, ids=[f"{p}-{signals.Signals(s).name}" for p, s in CASES])
def test_worker_killed_in_a_gpu_phase(phase, sig, fault_runs, measured):
    run = fault_runs[(phase, sig)]
    assert run["stopped"], f"never stopped in {phase}: {run}"
    report = run["report"]
    errors = report.get("errors") or [{}]
    measured(f"exit {run['exit']}, {report.get('status')}, phase reported {errors[0].get('phase')}",
             wall_s=round(run["wall_s"], 1))
    assert run["exit"] == 4, run["stdout"][-1000:] + run["stderr"][-1000:]
    assert report.get("status") == "worker-failed"
    assert errors[0].get("phase") == phase
    assert f"killed by {signals.Signals(sig).name}" in run["stdout"]
    assert not run["leftovers"]
    assert run["worker_gone"] and run["child_gone"], "orphaned process"
    assert "Traceback" not in run["stdout"] + run["stderr"]
