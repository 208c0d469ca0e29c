"""One rank of a distributed run: join the process group (NCCL on a GPU, gloo on CPU) unless the script
does, run the capture pipeline on cuda:LOCAL_RANK with the rank's torch.distributed calls recorded, meet
the other ranks after capture, and write the rank's result. Events (phases, collectives, DDP wrappers)
go to a file as they happen, so a rank that is killed still leaves its record."""

from __future__ import annotations

import json
import os
import re
import time
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any, Callable, Iterator

from cgtool.model.job import Job
from cgtool.model.phase_log import PhaseLog
from cgtool.model.ranks import MULTICAST_OFF

NCCL_ENV = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT",
            "NCCL_BLOCKING_WAIT", "TORCH_NCCL_ENABLE_MONITORING", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
            *MULTICAST_OFF)


def rank_identity() -> tuple[int, int, int]:
    """(rank, world_size, local_rank) from the launcher's environment (torchrun sets all three)."""
    env = os.environ
    return int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", env.get("RANK", 0)))


def script_inits_group(path: str) -> bool:
    """True when the script calls init_process_group itself (then cgtool leaves it to the script)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return re.search(r"\binit_process_group\s*\(", fh.read()) is not None
    except OSError:
        return False


def init_group(job: Job, local_rank: int) -> dict[str, Any]:
    """Pick the device and join the default process group; facts about both for the report."""
    import torch
    import torch.distributed as dist

    os.environ.update(MULTICAST_OFF)
    gpu = torch.cuda.is_available() and not job.force_cpu
    if gpu:
        torch.cuda.set_device(local_rank % max(1, torch.cuda.device_count()))
    backend = "nccl" if gpu else "gloo"
    timeout = job.settings.collective_timeout_s
    by = "script"
    if not dist.is_initialized() and not script_inits_group(job.script):
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout))
        by = "cgtool"
    facts: dict[str, Any] = {"backend": backend, "group_by": by, "device": f"cuda:{local_rank}" if gpu else "cpu",
                             "collective_timeout_s": timeout, "pid": os.getpid(),
                             "env": {k: os.environ[k] for k in NCCL_ENV if k in os.environ}}
    if gpu:
        try:
            v = torch.cuda.nccl.version()
            facts["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception as exc:  # noqa: BLE001 - a build without NCCL
            facts["nccl"] = f"unavailable ({type(exc).__name__})"
    return facts


@contextmanager
def counting_steps(watch: Any) -> Iterator[None]:
    """Number the step's calls, so each recorded collective says which iteration issued it (the ranks are
    compared iteration by iteration): a watcher every call of the step tells first (contract.STEP_WATCHERS)."""
    from cgtool.script.contract import STEP_WATCHERS

    def count(_script: Any, _state: Any) -> None:
        watch.iteration += 1

    STEP_WATCHERS.append(count)
    try:
        yield
    finally:
        STEP_WATCHERS.remove(count)


class EventFile:
    """The rank's JSON-lines event file, flushed per event (read by the parent even after a kill)."""

    def __init__(self, path: str) -> None:
        self.fh = open(path, "a", buffering=1)
        self.phase = ""

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("phase"):
            self.phase = event["phase"]
        try:
            self.fh.write(json.dumps(event, default=str) + "\n")
        except (OSError, ValueError):
            pass


def run_rank(job: Job, run_dir: str, log_to: Callable[[dict[str, Any]], None] | None = None) -> int:
    """Run this rank; its result goes to run_dir/rank{R}.json. The exit status: 0 when the rank captured
    (or ran on CPU) without errors, 1 otherwise (so the launcher stops the ranks still waiting)."""
    from cgtool.pipeline import rank_gather
    from cgtool.pipeline.capture_job import capture_job
    from cgtool.pipeline.rank_gate import RankGate, install
    from cgtool.pipeline.rank_sequence import SequenceCheck
    from cgtool.trace.dist_watch import watch_distributed

    rank, world, local = rank_identity()
    events = EventFile(os.path.join(run_dir, f"rank{rank}.events.jsonl"))
    events({"start": {"pid": os.getpid(), "rank": rank, "world_size": world, "local_rank": local}})

    def send(event: dict[str, Any]) -> None:
        events(event)
        if log_to is not None:
            log_to(event)

    progress = PhaseLog(send)
    sequence = SequenceCheck(rank, world, events)
    gate = RankGate(run_dir, rank, world, job.settings.collective_timeout_s,
                    sequence.at_meeting_point)
    job = replace(job, settings=replace(job.settings, rank=rank, world_size=world))
    result: dict[str, Any] = {"rank": rank, "facts": {}}
    t0 = time.perf_counter()
    try:
        progress.phase("init-process-group", f"rank {rank} of {world}")
        result["facts"] = init_group(job, local)
        events({"facts": result["facts"]})
        install(gate)
        with watch_distributed(events, lambda: events.phase, sequence.on_collective) as watch, counting_steps(watch):
            done = capture_job(job, progress)  # a rank runs capture jobs only (commands/distributed.py)
        result["report"] = done.to_json()
        if done.status == "cpu-only" and not done.errors:
            sequence.at_meeting_point()  # a CPU run has no capture to meet after: it finished its compared phases
    except Exception as exc:  # the process group could not form: the rank's report says so
        from cgtool.pipeline.capture_job import new_report
        from cgtool.script.errors import error_record

        failed = new_report(job)
        failed.errors.append(error_record(progress.current or "init-process-group", exc))
        result["report"] = failed.to_json()
    result["wall_s"] = round(time.perf_counter() - t0, 3)
    path = os.path.join(run_dir, f"rank{rank}.json")
    with open(path + ".tmp", "w") as fh:
        json.dump(result, fh)
    os.replace(path + ".tmp", path)
    gate.done()
    if rank_gather.wanted() and world > 1 and rank != 0:
        hand_over(lambda: rank_gather.push(rank, run_dir))
    report = result.get("report") or {}
    # a step compiled with CUDA graphs ("compiled": torch.compile's trees observed, no capture of cgtool's) is a success
    ok = (not report.get("errors") and report.get("status") in ("captured", "compiled", "cpu-only")
          and sequence.found is None)
    if not ok and sequence.found is None:  # diverged: no peer gets past its collective; the launcher stops them
        gate.linger(job.settings.linger_s)
    if rank_gather.wanted() and world > 1 and rank == 0:  # the others' files, from the store, beside rank 0's own
        hand_over(lambda: rank_gather.gather(world, run_dir, job.settings.collective_timeout_s + 30))
    return 0 if ok else 1


def hand_over(fn: Callable[[], Any]) -> None:
    """Move results through the store; a store that is gone (a host ended) leaves this host's files as they are."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        print(f"cgtool: could not hand the rank results over through the store ({type(exc).__name__}: {exc})")
