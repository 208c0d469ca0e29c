"""The child's side of the worker (`python -m cgtool.worker JOB RESULT FD`): read the job, run it through
the pipeline with progress events written to the pipe FD, write the result atomically, and leave without
interpreter teardown (a poisoned CUDA context can hang or crash in atexit handlers).

SIGINT ends the worker at once, as SIGTERM does (the parent reports "killed by SIGINT"); so a
KeyboardInterrupt inside the worker can only be one the script raised itself, and is reported as its error.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from cgtool.model.job import Job
from cgtool.model.phase_log import PhaseLog
from cgtool.worker.lifetime import end_with_parent, kill_descendants

if TYPE_CHECKING:
    from cgtool.pipeline.result import JobResult


def pipe_writer(fd: int):  # noqa: ANN201 - a callable for PhaseLog
    """A PhaseLog sender that writes one JSON line per event to the parent's pipe (lost if it closed)."""
    pipe = os.fdopen(fd, "w", buffering=1)

    def send(event: dict[str, Any]) -> None:
        try:
            pipe.write(json.dumps(event, default=str) + "\n")
        except OSError:
            pass

    return send


def write_result(path: str, result: JobResult) -> None:
    """The job's result as JSON, atomically (the parent reads it back with worker/client.py: read_result)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result.to_json(), fh)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    job_path, result_path, fd = argv[0], argv[1], int(argv[2])
    with open(job_path) as fh:
        job = Job.from_json(json.load(fh))
    # cgtool killed (SIGKILL): this worker and all it started end too, and cgtool's folders go
    end_with_parent(folders=tuple(f for f in (os.path.dirname(os.path.abspath(job_path)), job.work_dir) if f))
    from cgtool.pipeline import preload, run_job

    send = pipe_writer(fd)
    preload()  # torch's own import output (a NumPy warning) is not the script's: mark where the script's begins
    send({"output_start": _output_offset()})
    try:
        write_result(result_path, run_job(job, PhaseLog(send)))
    finally:
        kill_descendants()  # what the step started (new sessions too: this worker is their subreaper)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _output_offset() -> int:
    """How much the worker has written to its output (stdout and stderr share one file) so far."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        return os.lseek(1, 0, os.SEEK_CUR)
    except (OSError, ValueError):
        return 0
