"""A clean step that stops and waits in a chosen phase, for fault tests (tests/test_faults.py and
tests/gpu/test_faults_gpu.py) that signal the worker there.

Where to stop: CGTOOL_FAULT_AT, or the first line of `fault_at.txt` beside this file:
  load | setup          module-level code, or setup()
  call:N                the N-th call of step() (warmup calls come first; on a GPU then capture, replay
                        check and timing call it: the test checks which phase the worker reported)
  capturing             the first call of step() made while a CUDA stream is capturing
On stopping, it forks `sleep 1000` (which must not outlive the worker), writes "<worker pid> <sleep pid>" to
`pids` beside this file (or in CGTOOL_FAULT_DIR) and sleeps.
"""

import os
import subprocess
import time

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_DIR = os.environ.get("CGTOOL_FAULT_DIR") or _HERE


def _where() -> str:
    if os.environ.get("CGTOOL_FAULT_AT"):
        return os.environ["CGTOOL_FAULT_AT"]
    try:
        with open(os.path.join(_HERE, "fault_at.txt")) as fh:
            return fh.readline().strip()
    except OSError:
        return ""


AT = _where()
_calls = 0


def _stop_here() -> None:
    child = subprocess.Popen(["sleep", "1000"])
    tmp = os.path.join(_DIR, "pids.tmp")
    with open(tmp, "w") as fh:
        fh.write(f"{os.getpid()} {child.pid}\n")
    os.replace(tmp, os.path.join(_DIR, "pids"))
    time.sleep(1000)


if AT == "load":
    _stop_here()


def setup(device):
    if AT == "setup":
        _stop_here()
    return {"w": torch.full((8, 8), 0.5, device=device)}


def step(w):
    global _calls
    _calls += 1
    capturing = torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
    if AT == f"call:{_calls}" or (AT == "capturing" and capturing):
        _stop_here()
    return w @ w
