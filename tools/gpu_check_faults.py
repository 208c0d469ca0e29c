"""gpu_check section `faults`: the worker killed by SIGKILL, SIGTERM and SIGINT in each GPU phase (capture,
replay check, timing) of `cgtool capture`: exit 4, a report naming the signal and the phase, nothing left
running. CPU phases (load, setup, warmup): tests/test_faults.py. Run: `bash tools/gpu_check.sh faults`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.procs import gone  # noqa: E402  (one definition, shared with tests/test_faults.py)

FAULT_STOPS = {  # GPU phase -> where tests/data/faults/stop_in_phase.py waits (3 warmup calls come first)
    "capture": "capturing",  # the step's call while the stream captures (call 4)
    "replay-check": "call:5",  # the replay check's first eager call on fresh inputs (it makes two: eager vs eager)
    "timing": "call:7",  # the first eager call of the quick timing (after the replay check's two)
}


def _fault_run(phase: str, sig: int, work: str) -> tuple[str, bool, str]:
    """`cgtool capture` of the fault script, the worker signalled once it waits in `phase`: exit 4, a report
    naming the signal and the phase, nothing left running (the worker and the `sleep` it forked)."""
    import shutil
    import signal as signals
    import tempfile

    name = signals.Signals(sig).name
    folder = tempfile.mkdtemp(prefix=f"fault-{phase}-{name}-", dir=work)
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
        return f"fault: {name} in {phase}", False, f"never stopped there; exit {proc.returncode}: {stdout[-200:]} {stderr[-200:]}"
    worker, child = (int(p) for p in open(pids_path).read().split())
    os.kill(worker, sig)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        return f"fault: {name} in {phase}", False, "cgtool did not return within 120 s of the signal"
    try:
        report = json.load(open(os.path.join(out, "report.json")))
        reported = report["errors"][0]["phase"] if report["errors"] else "-"
        status = report["status"]
    except (OSError, ValueError, KeyError, IndexError):
        reported, status = "-", "no report.json"
    leftovers = [p for p in os.listdir(out) if p.startswith(".")] if os.path.isdir(out) else []
    ok = (proc.returncode == 4 and status == "worker-failed" and reported == phase and f"killed by {name}" in stdout
          and not leftovers and gone(worker) and gone(child) and "Traceback" not in stdout + stderr)
    return (f"fault: {name} in {phase}", ok, f"exit {proc.returncode}, {status}, phase reported {reported}, "
            f"{'no orphan' if gone(child) else 'ORPHANED sleep ' + str(child)}, {time.perf_counter() - t0:.1f} s")


def section(row: Callable, work: str) -> None:
    """The worker killed by SIGKILL, SIGTERM and SIGINT in each GPU phase (capture, replay check, timing): nine
    runs at once (a tiny step each), about 20-40 s. CPU phases (load, setup, warmup): tests/test_faults.py."""
    import signal as signals
    from concurrent.futures import ThreadPoolExecutor

    cases = [(phase, sig) for phase in FAULT_STOPS for sig in (signals.SIGKILL, signals.SIGTERM, signals.SIGINT)]
    with ThreadPoolExecutor(len(cases)) as pool:
        for check, ok, detail in pool.map(lambda c: _fault_run(*c, work), cases):
            row(check, ok, detail)
