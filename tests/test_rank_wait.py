"""Under the user's torchrun a rank that exits failing waits for rank 0 of its host (worker/distributed.py): the pid
file names a live process only when pid and start time both match, so a file a killed run left names nobody."""

import os
import subprocess
import sys
import time

from cgtool.worker.distributed import _read_pid, _started, _wait_for_rank0


def test_the_pid_file_names_rank_0_only_while_that_process_runs(tmp_path):
    path = tmp_path / "rank0.pid"
    path.write_text(f"{os.getpid()} {_started(os.getpid())}")
    assert _read_pid(str(path)) == os.getpid()
    path.write_text(f"{os.getpid()} 1")  # the same pid, another process (a killed run's file, the pid reused)
    assert _read_pid(str(path)) is None
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    path.write_text(f"{gone.pid} 5")
    assert _read_pid(str(path)) is None
    assert _read_pid(str(tmp_path / "missing.pid")) is None


def test_the_wait_ends_when_rank_0_ends_and_never_past_its_bound():
    rank0 = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    t0 = time.monotonic()
    _wait_for_rank0(rank0.pid, 20.0)
    rank0.wait()
    assert time.monotonic() - t0 < 10
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    t0 = time.monotonic()
    _wait_for_rank0(stuck.pid, 0.5)
    assert time.monotonic() - t0 < 5
    stuck.kill()
    stuck.wait()
