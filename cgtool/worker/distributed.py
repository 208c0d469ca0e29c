"""A distributed run from the parent's side: the job's distributed settings, then either N ranks started
through torch.distributed.run (`--nproc-per-node N`) or, under a torchrun the user started, this process's
own rank; the ranks' results merged into one DistReport."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import replace
from typing import Any, Callable

from cgtool.errors import interrupted
from cgtool.model.exit_codes import ExitCode, distributed_exit
from cgtool.model.job import CaptureSettings, Job
from cgtool.model.ranks import DistReport
from cgtool.model.report import ReplayCheck, Report
from cgtool.worker import gather, lifetime
from cgtool.worker.launch import EventTail, LaunchOutcome, kill_tree, launch_env, launch_ranks, rank_result
from cgtool.worker.merge import merge
from cgtool.worker.start import python_command

DDP_WARMUP = 11  # PyTorch's docs: at least 11 DDP-enabled warmup iterations before capture


def under_torchrun() -> bool:
    """True when this process is a rank of a launcher the user started (torchrun sets these)."""
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")) and "CGTOOL_RANK_CHILD" not in os.environ


def dist_settings(settings: CaptureSettings, timeout: float, warmup_given: bool) -> CaptureSettings:
    """The settings every rank gets: collective timeout (a quarter of --timeout, 10-120 s) and, unless
    --warmup was given, the 11 warmup iterations DDP needs."""
    return replace(settings, collective_timeout_s=max(10.0, min(120.0, timeout / 4)),
                   warmup=settings.warmup if warmup_given else max(settings.warmup, DDP_WARMUP))


def run_distributed(job: Job, nproc: int, timeout: float,
                    on_event: Callable[[int, dict[str, Any]], None] | None = None,
                    stop: threading.Event | None = None) -> tuple[DistReport, LaunchOutcome]:
    """`--nproc-per-node N`: N ranks through torch.distributed.run, merged."""
    with tempfile.TemporaryDirectory(prefix="cgtool-ranks-") as run_dir:
        outcome = launch_ranks(job, nproc, timeout, run_dir, on_event, stop)
        return merge(job, outcome, job.settings), outcome


def run_as_rank(job: Job, timeout: float,
                on_event: Callable[[int, dict[str, Any]], None] | None = None) -> tuple[DistReport | None, LaunchOutcome]:
    """Under the user's torchrun: run this rank (in a child, as always) in this host's temp folder for the run;
    each rank's child hands its files to rank 0's through the process group's store (pipeline/rank_gather.py),
    so hosts need no shared folder; rank 0 merges (the others return None)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    run_id = f"{os.environ.get('TORCHELASTIC_RUN_ID', 'none')}-{os.environ.get('MASTER_PORT', '0')}"
    run_dir = os.path.join(tempfile.gettempdir(), f"cgtool-ranks-{os.getuid()}-{run_id}")
    os.makedirs(run_dir, exist_ok=True)
    rank0_pid = os.path.join(run_dir, "rank0.pid")
    if rank == 0:  # ranks of this host that end with a failing code wait for this process (see _wait_for_rank0)
        tmp = f"{rank0_pid}.{os.getpid()}"
        with open(tmp, "w") as fh:  # the pid and its start time: a file left by a killed run names no live process
            fh.write(f"{os.getpid()} {_started(os.getpid())}")
        os.replace(tmp, rank0_pid)
    job_path = os.path.join(run_dir, f"job.rank{rank}.json")
    with open(job_path, "w") as fh:
        import json

        json.dump(job.to_json(), fh)
    cmd = python_command("cgtool.worker.rank_child", job_path, run_dir)
    t0 = time.monotonic()
    proc = lifetime.start(lambda: subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, start_new_session=True,
        env=dict(launch_env(job), CGTOOL_RANK_CHILD="1", CGTOOL_GATHER="store")))
    tail = EventTail(os.path.join(run_dir, f"rank{rank}.events.jsonl"))
    outcome = LaunchOutcome([], cmd)
    rank0 = None
    try:
        while proc.poll() is None and time.monotonic() - t0 < timeout:
            if rank and rank0 is None:  # read while rank 0 is surely still running (it removes run_dir when done)
                rank0 = _read_pid(rank0_pid)
            for event in tail.poll():
                if on_event is not None:
                    on_event(rank, event)
            time.sleep(0.1)
        if proc.poll() is None:
            kill_tree(proc, set())
            outcome.failure, outcome.message = "timeout", f"rank {rank} ran past its time limit of {timeout:g} s (--timeout) and was killed"
    except KeyboardInterrupt:
        kill_tree(proc, set())
        outcome.failure, outcome.message = "interrupted", interrupted(lifetime.stop_name(), sentence=True)
    tail.poll()
    lifetime.reaped(proc.pid)
    outcome.returncode = proc.returncode
    if rank != 0:
        outcome.ranks = [rank_result(rank, run_dir, tail.events, proc.returncode, outcome.failure)]
        if gather.pushed(run_dir, rank):
            gather.remove_own_files(run_dir, rank)  # rank 0 has them from the store; this host's folder may be its own
        rank0 = rank0 or _read_pid(rank0_pid)
        if rank0 is not None and distributed_exit(None, outcome.failure, outcome.ranks) != ExitCode.OK:
            # bounded: rank 0 merges in seconds once its worker ends, which a stuck collective delays at most by
            # the collective timeout and the linger
            bound = job.settings.collective_timeout_s + job.settings.linger_s
            _wait_for_rank0(rank0, max(5.0, min(bound, timeout - (time.monotonic() - t0))))
        return None, outcome
    # rank 0's child wrote the other ranks' files into gathered/ before it ended (from the store,
    # pipeline/rank_gather.py); a rank missing there may still be in this host's folder
    gathered = os.path.join(run_dir, "gathered")

    def folder(r: int) -> str:
        return gathered if r and os.path.exists(os.path.join(gathered, f"done.rank{r}")) else run_dir

    deadline = time.monotonic() + max(5.0, timeout - (time.monotonic() - t0))
    while time.monotonic() < deadline and not all(
            os.path.exists(os.path.join(folder(r), f"done.rank{r}")) for r in range(world)):
        time.sleep(0.1)
    tails = [EventTail(os.path.join(folder(r), f"rank{r}.events.jsonl")) for r in range(world)]
    for t in tails:
        t.poll()
    outcome.ranks = [rank_result(r, folder(r), tails[r].events, None, outcome.failure) for r in range(world)]
    outcome.wall_s = time.monotonic() - t0
    merged = merge(job, outcome, job.settings)
    shutil.rmtree(run_dir, ignore_errors=True)  # every rank is done with it (rank 0 waited for them)
    return merged, outcome


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (state first, start time at index 19); [] where unknown."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _started(pid: int) -> str:
    """A process's start time in clock ticks since boot (/proc/PID/stat field 22); "" where unknown (not Linux)."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else ""


def _read_pid(path: str) -> int | None:
    """Rank 0's pid from its file, when that process still runs (same pid, same start time); else None."""
    try:
        with open(path) as fh:
            pid_text, _, started = fh.read().strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):  # not written yet, or another host's rank 0
        return None
    return pid if started == _started(pid) and (started or _alive(pid)) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process took the pid
        return False
    return _stat(pid)[:1] != ["Z"]  # "Z": ended, not yet reaped by its parent


def _wait_for_rank0(pid: int, bound_s: float) -> None:
    """A rank other than 0 on rank 0's host that is about to exit with a failing code (3 on CPU only, 1 when it
    failed) waits, at most `bound_s`, for rank 0 to end first: torchrun's agent stops every worker of a host as soon
    as one exits non-zero, and rank 0 would be stopped while it merges and writes the run's report (seen on 2 CPU
    cores: the report was missing in 4 of 6 runs)."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)


def lint_report(job: Job, nproc: int, timeout: float, stop: threading.Event | None = None) -> Report | None:
    """`lint --nproc-per-node N`: one Report for the script: rank 0's (or the first rank's that has one), with
    every finding of every rank and the cross-rank ones, and each failed rank's errors named by rank. None
    when Ctrl-C (SIGTERM, SIGHUP) or `stop` ended the ranks first."""
    from cgtool.model.report import WORKER_FAILED, ErrorRecord

    job = replace(job, settings=dist_settings(job.settings, timeout, warmup_given=False))
    dist, outcome = run_distributed(job, nproc, timeout, stop=stop)
    if outcome.failure == "interrupted":
        return None
    first = next((r.report for r in dist.ranks if r.report is not None), None)
    report = Report(job.script, job.entry, status=first.status if first else WORKER_FAILED,
                    device=first.device if first else "cpu")
    report.findings = dist.all_findings()
    report.replay = _failed_replay(dist) or (first.replay if first else None)
    report.errors = list(dist.errors)
    for r in dist.ranks:
        for e in r.report.errors if r.report else ():
            report.errors.append(ErrorRecord(e.phase, e.type, f"rank {r.rank}: {e.message}", e.frames, e.cuda_error,
                                             e.passed))
    return report


def _failed_replay(dist: DistReport) -> ReplayCheck | None:
    """The first rank's replay check that failed (model/exit_codes.replay_failed), its note naming the rank."""
    from dataclasses import replace

    from cgtool.model.exit_codes import replay_failed

    for r in dist.ranks:
        replay = r.report.replay if r.report is not None else None
        if replay is not None and replay_failed(replay):
            return replace(replay, note=f"rank {r.rank}: {replay.note}")
    return None
