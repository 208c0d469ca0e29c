"""Run a job in a disposable child process and always come back with a structured result.

A failed capture poisons the CUDA context and user code can crash the interpreter, so GPU work runs
in `python -m cgtool.worker` (started by worker/start.py, off the user's working folder). The parent passes a job (JSON), reads progress events from a pipe,
enforces the timeout, turns Ctrl-C into a clean stop, and reads the result (JSON) the child wrote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from cgtool.errors import interrupted
from cgtool.model.job import Job
from cgtool.model.report import WORKER_FAILED, ErrorRecord, Report
from cgtool.worker import lifetime
from cgtool.worker.start import python_command

if TYPE_CHECKING:
    from cgtool.pipeline.result import JobResult

OUTPUT_TAIL_CHARS = 4000


@dataclass
class WorkerOutcome:
    result: JobResult | None  # what the job returned; None when the worker died first
    failure: str | None = None  # "timeout", "crash", "interrupted" or None
    message: str = ""  # one paragraph for the user when failure is set
    phase: str = ""  # the last phase the worker announced
    output: str = ""  # the tail of what the worker (the user's script) printed
    returncode: int | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    output_start: int = 0  # offset in the output where the script's own output begins (after torch's import)


def run_job(job: Job, timeout: float | None = None,
            on_event: Callable[[dict[str, Any]], None] | None = None,
            stop: threading.Event | None = None) -> WorkerOutcome:
    """Run `job` in a child process; never raises for the child's failures.

    Ctrl-C (KeyboardInterrupt in this thread) or `stop` being set (from another thread) ends the worker
    within a poll interval, as "interrupted". However the worker ends, its whole process group is killed
    before it is reaped, so nothing the script forked outlives it.
    """
    with tempfile.TemporaryDirectory(prefix="cgtool-worker-") as tmp:
        job_path = os.path.join(tmp, "job.json")
        result_path = os.path.join(tmp, "result.json")
        log_path = os.path.join(tmp, "output.log")
        with open(job_path, "w") as fh:
            json.dump(job.to_json(), fh)
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if job.force_cpu:  # --cpu (and the whole-step analysis of a failed capture): as on a machine without a GPU
            env["CUDA_VISIBLE_DEVICES"] = ""
        with open(log_path, "wb") as log:
            proc = lifetime.start(lambda: subprocess.Popen(
                python_command("cgtool.worker", job_path, result_path, str(write_fd)),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(write_fd,), start_new_session=True, env=env,
            ))
        os.close(write_fd)
        outcome = WorkerOutcome(result=None)
        reader = threading.Thread(target=_read_events, args=(read_fd, outcome, on_event), daemon=True)
        reader.start()
        try:
            ended = _wait_unreaped(proc, timeout, stop)
        except KeyboardInterrupt:
            ended = "interrupted"
        _kill_group(proc)
        _reap(proc)
        lifetime.reaped(proc.pid)  # what the step started in new sessions came back to cgtool: end it
        if ended == "timeout":
            outcome.failure = "timeout"
            outcome.message = (f"The worker ran past its time limit of {timeout:g} s (--timeout or [tool.cgtool] timeout) during the {outcome.phase or 'start-up'} "
                               "phase and was stopped. A step that hangs (a wait on a stream that never runs, a deadlock) "
                               "or a very slow warmup does this; raise --timeout if the step is just slow.")
        elif ended == "interrupted":
            outcome.failure = "interrupted"
            outcome.message = (f"{interrupted(lifetime.stop_name(), sentence=True)} during the {outcome.phase or 'start-up'} phase; "
                               "the worker was stopped.")
        reader.join(timeout=2)
        outcome.returncode = proc.returncode
        outcome.output = _tail(log_path, outcome.output_start)
        if outcome.failure is None:
            outcome.result = read_result(result_path)
            if outcome.result is None:
                outcome.failure = "crash"
                outcome.message = (f"The worker process died during the {outcome.phase or 'start-up'} phase "
                                   f"({describe_exit(proc.returncode)}) without a result: the script or a library it "
                                   f"calls crashed the interpreter, or something outside cgtool stopped the worker"
                                   f"{_KILL_HINT if proc.returncode == -signal.SIGKILL else ''}.")
        return outcome


_KILL_HINT = " (SIGKILL often means the machine ran out of memory)"
_POLL_S = 0.05


def _wait_unreaped(proc: subprocess.Popen, timeout: float | None, stop: threading.Event | None) -> str:
    """Wait until the worker exits, leaving it a zombie (so its process group id stays reserved for
    _kill_group): "exited", "timeout" or "interrupted" (stop was set)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return "exited"
        except ChildProcessError:  # already reaped elsewhere
            return "exited"
        if stop is not None and stop.is_set():
            return "interrupted"
        if deadline is not None and time.monotonic() >= deadline:
            return "timeout"
        time.sleep(pause)
        pause = min(pause * 2, _POLL_S)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's process group (its own session): the worker and anything the script forked."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(proc: subprocess.Popen) -> None:
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:  # a second Ctrl-C: the worker is already killed, finish reaping it
            continue


def read_result(path: str) -> JobResult | None:
    """The result worker/child.py: write_result left, or None when there is none (the worker died first)."""
    from cgtool.pipeline.result import JobResult

    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return JobResult.from_json(data) if isinstance(data, dict) else None


def describe_exit(code: int | None, word: str = "exit status") -> str:
    """A process's end in words: `killed by SIGKILL`, `exit status 1` (`word` names the number)."""
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"{word} {code}"


def _tail(path: str, start: int = 0) -> str:
    """The last OUTPUT_TAIL_CHARS bytes of the worker's output from `start` on."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(start, size - OUTPUT_TAIL_CHARS, 0))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _read_events(fd: int, outcome: WorkerOutcome, on_event: Callable[[dict[str, Any]], None] | None) -> None:
    with os.fdopen(fd, "r", errors="replace") as pipe:
        for line in pipe:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if "output_start" in event:
                outcome.output_start = int(event["output_start"])
                continue
            outcome.events.append(event)
            if event.get("phase"):
                outcome.phase = event["phase"]
            if on_event is not None:
                try:
                    on_event(event)
                except Exception:
                    pass  # a display problem must not lose the run


def report_from_outcome(job: Job, outcome: WorkerOutcome) -> Report:
    """The worker's report, or a report that explains why the worker gave none."""
    if outcome.result is not None and outcome.result.report is not None:
        report = outcome.result.report
    else:
        from cgtool import __version__

        report = Report(script=job.script, entry=job.entry, settings=job.settings.to_json(),
                        cgtool_version=__version__, status=WORKER_FAILED)
        report.errors.append(ErrorRecord(outcome.phase or "worker", outcome.failure or "crash", outcome.message))
    report.script_output = outcome.output
    return report
