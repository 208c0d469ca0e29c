"""Start N ranks through PyTorch's own launcher (torch.distributed.run, torchrun's elastic agent, run by
cgtool/worker/launcher.py) and always come back: a wall timeout that kills the launcher and every rank it started (ranks run in their
own sessions, so the whole process tree is found through /proc and killed, not only the launcher's group),
Ctrl-C the same way, and per rank what its files recorded (cgtool/pipeline/rank_job.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from cgtool.errors import interrupted
from cgtool.model.job import Job
from cgtool.model.ranks import FINISHED, MULTICAST_OFF, NOT_STARTED, STOPPED, Collective, DdpWrap, RankResult
from cgtool.model.report import Report
from cgtool.worker import lifetime
from cgtool.worker.client import describe_exit
from cgtool.worker.lifetime import descendants
from cgtool.worker.start import python_args, python_command

OUTPUT_TAIL_CHARS = 4000


@dataclass
class LaunchOutcome:
    ranks: list[RankResult]
    command: list[str]
    failure: str | None = None  # "timeout", "interrupted", "launcher" (it ended with no rank result) or None
    message: str = ""
    returncode: int | None = None
    wall_s: float = 0.0
    launcher_output: str = ""
    leftover: list[int] = field(default_factory=list)  # rank processes still alive after the launcher ended


RANK_MEMORY = 512 << 20  # bytes of available memory per rank: a Python with torch imported, before the model
RANKS_PER_CPU = 4  # ranks spend most of their time waiting on each other; more than this and the run crawls


def rank_capacity() -> tuple[int, str]:
    """How many ranks this machine can hold at once, and why that many."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    cap, why = RANKS_PER_CPU * cpus, f"{cpus} CPU{'s' if cpus != 1 else ''} × {RANKS_PER_CPU} ranks each"
    try:
        with open("/proc/meminfo") as fh:
            free = next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("MemAvailable:"))
        if free // RANK_MEMORY < cap:
            cap, why = max(1, free // RANK_MEMORY), f"{free / (1 << 30):.1f} GiB of available memory, 0.5 GiB a rank"
    except (OSError, ValueError, StopIteration):
        pass
    return cap, why


def check_nproc(nproc: int) -> None:
    """CgtoolError (exit 2) for more ranks than this machine can hold: each is a process with torch imported."""
    cap, why = rank_capacity()
    if nproc > cap:
        from cgtool.errors import CgtoolError, ExitCode

        raise CgtoolError(f"--nproc-per-node {nproc} is more ranks than this machine can hold at once: at most {cap} "
                          f"({why}). Run fewer ranks per node.", ExitCode.USAGE)


def launcher_command(nproc: int, job_path: str, run_dir: str) -> list[str]:
    """The launcher's command: torch.distributed.run in cgtool.worker.launcher; each rank is cgtool.worker.rank_child,
    started (--no-python) by the interpreter itself as worker/start.py starts every process of cgtool's."""
    return python_command("cgtool.worker.launcher", os.path.join(run_dir, "tmp"),
                          "torch.distributed.run", "--standalone", "--nnodes", "1",
                          "--nproc-per-node", str(nproc), "--max-restarts", "0", "--monitor-interval", "0.1",
                          "--no-python", sys.executable, "-u", *python_args("cgtool.worker.rank_child", job_path, run_dir))


def launch_env(job: Job) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **MULTICAST_OFF)
    env.setdefault("OMP_NUM_THREADS", "1")
    if job.force_cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""  # --cpu: gloo ranks, no GPU touched
    return env


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


def kill_tree(proc: subprocess.Popen, known: set[int]) -> None:
    """SIGKILL the launcher, every process below it and every rank pid seen, with their process groups."""
    pids = set(known) | set(descendants(proc.pid))
    for pid in [proc.pid, *pids]:
        for kill in (lambda p: os.killpg(p, signal.SIGKILL), lambda p: os.kill(p, signal.SIGKILL)):
            try:
                kill(pid)
            except (ProcessLookupError, PermissionError, OSError):
                pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class EventTail:
    """Reads a rank's events file as it grows."""

    def __init__(self, path: str) -> None:
        self.path, self.pos = path, 0
        self.events: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        try:
            with open(self.path) as fh:
                fh.seek(self.pos)
                chunk = fh.read()
        except OSError:
            return []
        complete = chunk[: chunk.rfind("\n") + 1]
        self.pos += len(complete.encode())
        new = []
        for line in complete.splitlines():
            try:
                new.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        self.events += new
        return new


def launch_ranks(job: Job, nproc: int, timeout: float, run_dir: str,
                 on_event: Callable[[int, dict[str, Any]], None] | None = None,
                 stop: threading.Event | None = None) -> LaunchOutcome:
    """Run `job` on `nproc` ranks; never raises for the ranks' failures and never outlives `timeout`."""
    os.makedirs(run_dir, exist_ok=True)
    job_path = os.path.join(run_dir, "job.json")
    with open(job_path, "w") as fh:
        json.dump(job.to_json(), fh)
    cmd = launcher_command(nproc, job_path, run_dir)
    tails = [EventTail(os.path.join(run_dir, f"rank{r}.events.jsonl")) for r in range(nproc)]
    known: set[int] = set()
    outcome = LaunchOutcome([], cmd)
    t0 = time.monotonic()
    with open(os.path.join(run_dir, "launcher.log"), "wb") as log:
        proc = lifetime.start(lambda: subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                                       stderr=subprocess.STDOUT, start_new_session=True,
                                                       env=launch_env(job)))

    def pump() -> None:
        for r, tail in enumerate(tails):
            for event in tail.poll():
                if "start" in event:
                    known.add(int(event["start"]["pid"]))
                if on_event is not None:
                    try:
                        on_event(r, event)
                    except Exception:  # noqa: BLE001 - a display problem must not lose the run
                        pass

    try:
        while proc.poll() is None:
            pump()
            known.update(descendants(proc.pid))
            if time.monotonic() - t0 > timeout:
                kill_tree(proc, known)
                outcome.failure = "timeout"
                outcome.message = f"the ranks ran past their time limit of {timeout:g} s (--timeout); cgtool killed the launcher and every rank"
                break
            if stop is not None and stop.is_set():  # lint's other thread got Ctrl-C (or SIGTERM)
                raise KeyboardInterrupt
            time.sleep(0.1)
    except KeyboardInterrupt:
        kill_tree(proc, known)
        outcome.failure = "interrupted"
        outcome.message = f"{interrupted(lifetime.stop_name(), sentence=True)}; cgtool killed the launcher and every rank"
    pump()
    outcome.leftover = [p for p in known if _alive(p)]
    if outcome.leftover:  # the launcher left a rank behind: it must not outlive cgtool
        kill_tree(proc, set(outcome.leftover))
    lifetime.reaped(proc.pid)
    outcome.returncode = proc.returncode
    outcome.wall_s = time.monotonic() - t0
    outcome.launcher_output = _tail(os.path.join(run_dir, "launcher.log"))
    exits = _exit_codes(outcome.launcher_output)
    outcome.ranks = [rank_result(r, run_dir, tails[r].events, exits.get(r), outcome.failure) for r in range(nproc)]
    if outcome.failure is None and not any(r.report for r in outcome.ranks):
        outcome.failure = "launcher"
        outcome.message = (f"torch.distributed.run ended ({describe_exit(proc.returncode, 'exit')}) before any rank wrote a result; "
                           "its output is in the report")
    return outcome


def rank_result(rank: int, run_dir: str, events: list[dict[str, Any]], code: int | None,
                 failure: str | None) -> RankResult:
    res = RankResult(rank)
    for e in events:
        if e.get("phase"):
            res.phase = e["phase"]
        elif "collective" in e:
            res.collectives.append(Collective.from_json(e["collective"]))
        elif "ddp" in e:
            res.ddp.append(DdpWrap.from_json(e["ddp"]))
        elif "facts" in e:
            res.facts = dict(e["facts"])
        elif "divergence" in e:
            res.divergence = dict(e["divergence"])
        elif "start" in e:
            res.ended = STOPPED
    try:
        with open(os.path.join(run_dir, f"rank{rank}.json")) as fh:
            data = json.load(fh)
        res.report = Report.from_json(data["report"])
        res.facts = data.get("facts") or res.facts
        res.ended = FINISHED
    except (OSError, ValueError, KeyError):
        pass
    res.output = _tail(os.path.join(run_dir, f"rank{rank}.log"))
    if res.report is not None:
        res.report.script_output = res.output
    if code is not None:
        res.exit = describe_exit(code, "exit")
    elif res.ended == STOPPED:
        res.exit = "killed by cgtool (timeout)" if failure == "timeout" else "stopped by the launcher"
    elif res.ended == NOT_STARTED:
        res.exit = "never started"
    else:
        res.exit = "finished"
    return res


def _exit_codes(text: str) -> dict[int, int]:
    """rank → exit code from torch.distributed.run's failure summary (`rank : 1 (local_rank: 1)` / `exitcode : -9`)."""
    out = {}
    for m in re.finditer(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)", text):
        out[int(m.group(1))] = int(m.group(2))
    return out


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - OUTPUT_TAIL_CHARS))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""
