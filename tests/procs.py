"""Process helpers shared by the fault tests (tests/test_faults.py, tests/gpu/test_faults_gpu.py)."""

from __future__ import annotations

import time


def gone(pid: int, timeout: float = 10.0) -> bool:
    """True once `pid` has exited (a zombie waiting for init to reap it counts as gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False
