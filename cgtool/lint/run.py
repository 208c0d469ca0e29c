"""`cgtool lint`'s core: find the scripts, analyse each in its own worker, filter, collect a LintResult."""

from __future__ import annotations

import ast
import os
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from cgtool.errors import CgtoolError, ExitCode
from cgtool.files.inputs import SCRIPT, check_input, read_input
from cgtool.lint.filter import filter_findings, rule_enabled
from cgtool.model.exit_codes import replay_not_compared
from cgtool.model.job import CAPTURE, CaptureSettings, Job
from cgtool.model.lint_result import ANALYSED, ERROR, LintResult, ScriptResult
from cgtool.model.report import CAPTURE_FAILED, WORKER_FAILED, Report
from cgtool.model.report_parts import TRACER_STOPPED
from cgtool.model.rules import CROSS_RANK_RULES, GPU_ONLY_RULES
from cgtool.script.ranks import written_for_ranks
from cgtool.worker import lifetime

NO_GROUP = "Default process group has not been initialized"  # torch's words for a collective with no group

_SKIP_DIRS = {"__pycache__", ".git", ".venv", "venv", "node_modules", "build", "dist", "cgtool-out"}


@dataclass(frozen=True)
class LintOptions:
    entry: str = "step"
    warmup: int = 3
    timeout: float = 300.0
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    force_cpu: bool = False
    jobs: int = 1
    nproc: int = 0  # > 0: each script on this many ranks (cgtool/worker/distributed.py)
    scripts_only: bool = False  # --scripts-only: files given that define no entry are passed over (pre-commit)


def defines_function(path: str, name: str) -> bool:
    """True when the file defines `name` at top level (read with ast; nothing is imported)."""
    try:
        tree = ast.parse(read_input(path, SCRIPT), path)
    except (SyntaxError, ValueError, CgtoolError, RecursionError, MemoryError):
        return True  # let the analysis report the syntax error (or the nesting) for this file
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in tree.body)


def find_scripts(paths: Sequence[str], entry: str, scripts_only: bool = False) -> list[tuple[str, str]]:
    """(script, entry) pairs: files as given (`script.py:fn` names the entry of that file; with `scripts_only`, only
    those that define their entry function, as in a folder); folders searched recursively for .py files that
    define the entry function."""
    from cgtool.script.contract import entry_name, parse_target

    entry = entry_name(entry)  # --entry "" or __init__: a usage error before any script runs
    found: list[tuple[str, str]] = []
    for target in paths:
        path, own_entry = parse_target(target, None)
        if not os.path.lexists(path):
            raise CgtoolError(f"No such file or folder: {path}", ExitCode.USAGE)
        if not os.path.isdir(path):
            check_input(path, SCRIPT)  # the one reader's refusal: a FIFO, device, socket or dangling link
            fn = own_entry if path != target else entry
            if not scripts_only or defines_function(path, fn):
                found.append((path, fn))
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for f in sorted(files):
                full = os.path.join(root, f)
                # a FIFO named x.py would block the read for good: only regular files are scripts
                if f.endswith(".py") and f != "__init__.py" and os.path.isfile(full) and defines_function(full, entry):
                    found.append((full, entry))
    unique: dict[tuple[str, str], tuple[str, str]] = {}  # `a.py a.py ./a.py`: one script, checked once
    for path, fn in found:
        unique.setdefault((os.path.realpath(path), fn), (path, fn))
    return list(unique.values())


def default_jobs() -> int:
    """Scripts analysed at once when -j is not given: one per CPU this process may use, at most one per
    GiB of available memory (each worker is a Python with torch imported, 0.4-0.6 GB on CPU before the
    script's own model; more with a CUDA context) and at most MAX_DEFAULT_JOBS (on a GPU machine every
    worker shares the GPU)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    memory = _available_memory()
    by_memory = cpus if memory is None else int(memory // WORKER_MEMORY)
    return max(1, min(cpus, by_memory, MAX_DEFAULT_JOBS))


MAX_DEFAULT_JOBS = 8
WORKER_MEMORY = 1 << 30  # bytes of available memory counted per worker


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


Progress = Callable[[int, int, str], None]  # (scripts done, scripts in all, the script just done)


def lint_paths(paths: Sequence[str], opts: LintOptions, on_progress: Progress | None = None) -> LintResult:
    """Analyse every script found under `paths`, `opts.jobs` at a time (-j 1: one after another in this
    thread). Ctrl-C stops the workers under way and returns what finished, with `interrupted` set."""
    from cgtool import __version__

    scripts = find_scripts(paths, opts.entry, opts.scripts_only)
    if not scripts and opts.scripts_only:  # pre-commit passed no script: nothing to check is a pass
        return LintResult(scripts=[], version=__version__)
    if not scripts:
        raise CgtoolError(f"No scripts with a `{opts.entry}()` function under {', '.join(paths)}.", ExitCode.USAGE)
    done: dict[int, ScriptResult] = {}
    if on_progress is not None:
        on_progress(0, len(scripts), "")

    def finished(i: int, result: ScriptResult) -> None:
        if i not in done:
            done[i] = result
            if on_progress is not None:
                on_progress(len(done), len(scripts), scripts[i][0])

    if opts.jobs <= 1 or len(scripts) == 1:
        interrupted = _run_in_turn(scripts, opts, finished)
    else:
        interrupted = _run_in_pool(scripts, opts, finished)
    results = [done[i] for i in sorted(done)]
    device = "cuda" if any(r.device == "cuda" for r in results) else "cpu"
    unchecked = [path for i, (path, _) in enumerate(scripts) if i not in done] if interrupted else []
    return LintResult(scripts=results, version=__version__, device=device, interrupted=interrupted,
                      stop=lifetime.stop_name(), unchecked=unchecked)


def _run_in_turn(scripts: list[tuple[str, str]], opts: LintOptions,
                 finished: Callable[[int, ScriptResult], None]) -> bool:
    """One script after another in this thread; True when Ctrl-C stopped the run."""
    try:
        for i, (path, entry) in enumerate(scripts):
            result = lint_one(path, opts, entry)
            if result is None:
                return True
            finished(i, result)
    except KeyboardInterrupt:  # between two workers: the one under way was already stopped
        return True
    return False


def _run_in_pool(scripts: list[tuple[str, str]], opts: LintOptions,
                 finished: Callable[[int, ScriptResult], None]) -> bool:
    """`opts.jobs` workers at once, each watched by a thread. Ctrl-C may be delivered to any thread, but Python
    raises KeyboardInterrupt only in this one, and only when it runs: so it waits in short slices, never
    blocked for good. On Ctrl-C it sets `stop`, and every thread stops its worker within a poll interval."""
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=opts.jobs, thread_name_prefix="cgtool-lint")
    futures: dict[Future[ScriptResult | None], int] = {}
    interrupted = False
    try:
        for i, (path, entry) in enumerate(scripts):
            futures[pool.submit(lint_one, path, opts, entry, stop)] = i
        pending = set(futures)
        while pending and not interrupted:
            done, pending = wait(pending, timeout=_SLICE_S, return_when=FIRST_COMPLETED)
            for future in done:
                result = future.result()
                if result is None:
                    interrupted = True
                else:
                    finished(futures[future], result)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        stop.set()
        _shutdown(pool)
    if interrupted:  # keep the scripts that finished while the others were being stopped
        for future, i in futures.items():
            if future.done() and not future.cancelled() and future.exception() is None:
                result = future.result()
                if result is not None:
                    finished(i, result)
    return interrupted


_SLICE_S = 0.1


def _shutdown(pool: ThreadPoolExecutor) -> None:
    """Cancel what has not started and wait for the threads (each stops its worker within a poll interval);
    another Ctrl-C meanwhile does not leave a worker behind."""
    while True:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
            return
        except KeyboardInterrupt:
            continue


def lint_one(path: str, opts: LintOptions, entry: str | None = None,
             stop: threading.Event | None = None) -> ScriptResult | None:
    """Analyse one script in its own worker; None when Ctrl-C (or `stop`) ended the worker first."""
    analysed = analyse(lint_job(path, opts, entry), opts, stop)
    if analysed is None:
        return None
    report, world_of_one = analysed
    return script_result(path, report, opts, world_of_one)


def lint_job(path: str, opts: LintOptions, entry: str | None = None, names: dict[str, Any] | None = None) -> Job:
    """The worker job lint runs for one script (`names`: the contract's setup_fn/inputs_fn, from cgtool.check)."""
    settings = CaptureSettings(warmup=opts.warmup, timing=False, checks=True, replay_check=True)
    return Job(CAPTURE, os.path.abspath(path), entry or opts.entry, force_cpu=opts.force_cpu,
               settings=replace(settings, **names) if names else settings)


def analyse(job: Job, opts: LintOptions, stop: threading.Event | None = None) -> tuple[Report, bool] | None:
    """lint's analysis of one job through the analysis service (worker/service.py: analyse): its complete report (a
    failed capture completed by the CPU analysis of the whole step) and whether the script, written for ranks, ran
    as a world of one; None when Ctrl-C (or `stop`) ended it. `lint` and `cgtool.check` both come through here."""
    from cgtool.worker.service import analyse as run_analysis

    world_of_one = not opts.nproc and written_for_ranks(job.script)
    ranks = (opts.nproc or 1) if opts.nproc or world_of_one else None  # a script for ranks: a world of one rank
    analysis = run_analysis(job, opts.timeout, stop=stop, ranks=ranks)
    if analysis.interrupted:
        return None
    return analysis.report, world_of_one


def script_result(path: str, report: Report, opts: LintOptions, world_of_one: bool = False) -> ScriptResult:
    """Turn a capture report into lint's per-script record (filtered and suppressed). `world_of_one`: a script
    written for ranks ran as one rank; the cross-rank rules are listed as not checked."""
    findings = filter_findings(report.findings, opts.select, opts.ignore, files=[path])
    errors = []
    for e in report.errors:
        if report.status == CAPTURE_FAILED and e.phase == "capture":
            continue  # a failed capture is a finding (CG501 or the root cause), not a script error
        if not opts.nproc and NO_GROUP in e.message:  # a script the world of one could not serve
            errors.append(f"{e.phase} failed: it calls torch.distributed without a process group; "
                          "run it with --nproc-per-node N")
            continue
        frame = e.user_frame
        where = f" at {os.path.relpath(frame.file)}:{frame.line}" if frame else ""
        first_line = e.message.strip().splitlines()[0] if e.message.strip() else ""  # lint's errors are one line each
        ranks = " (as a world of one rank; --nproc-per-node N runs N ranks)" if world_of_one else ""
        errors.append(f"{e.phase} failed{where}: {e.label}{first_line}{_last_output(report)}{ranks}")
    not_compared = replay_not_compared(report.replay)  # fails the script as it fails `capture` (exit_codes.py)
    if not_compared:
        errors.append(not_compared)
    # a CPU analysis whose tracer stopped early has no findings past that point: never a silent "0 errors"
    errors += [s.text for s in report.skipped if s.code == TRACER_STOPPED]
    skipped: list[str] = []
    reason = ""
    if report.device != "cuda":
        skipped = [r for r in GPU_ONLY_RULES if rule_enabled(r, opts.select, opts.ignore)]
        reason = "no CUDA device: these rules need a real capture and replay"
    unchecked = [r for r in CROSS_RANK_RULES if rule_enabled(r, opts.select, opts.ignore)] if world_of_one else []
    return ScriptResult(path=path, entry=report.entry, status=ERROR if errors else ANALYSED, device=report.device,
                        findings=findings, errors=list(dict.fromkeys(errors)), skipped_rules=skipped,
                        skipped_reason=reason, ranks_unchecked=unchecked)


def _last_output(report: Report) -> str:
    """For a worker that died: the script's last line of output (lint writes no report to look in)."""
    if report.status != WORKER_FAILED:
        return ""
    lines = [ln.strip() for ln in report.script_output.splitlines() if ln.strip()]
    if not lines:
        return " The script printed nothing."
    last = lines[-1] if len(lines[-1]) <= 200 else lines[-1][:197] + "..."
    return f" The script's last output: {last}"
