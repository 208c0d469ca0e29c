"""Which exit code a run ends with: the one place where each command's result becomes an `ExitCode`.

The codes themselves (`ExitCode`, each member documented) live in cgtool/errors.py beside `CgtoolError`, the
lowest floor; `cli.main` turns the code a command returns into the process's exit status. The codes and what
each command means by them are listed in every command's --help and in README.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from cgtool.errors import CTRL_C, ExitCode, interrupted_status

if TYPE_CHECKING:
    from cgtool.model.finding import Finding
    from cgtool.model.partial import ModuleMap, Piecewise
    from cgtool.model.ranks import DistReport, RankResult
    from cgtool.model.report import ErrorRecord, ReplayCheck, Report

__all__ = ["ExitCode", "bench_exit", "bench_partial_exit", "capture_exit", "dist_has_problems", "distributed_exit",
           "lint_exit", "replay_failed", "replay_not_compared"]

# WorkerOutcome.failure values the codes read (worker/client.py, worker/launch.py)
INTERRUPTED = "interrupted"
TIMEOUT = "timeout"
LAUNCHER = "launcher"


def _by_error_type(errors: Iterable[ErrorRecord]) -> ExitCode | None:
    """USAGE for a usage error (a broken script contract, a bad option the worker found), ENVIRONMENT for an
    environment error (no CUDA device for bench, a missing dependency); None otherwise."""
    types = {e.type for e in errors}
    if "usage" in types:
        return ExitCode.USAGE
    if "environment" in types:
        return ExitCode.ENVIRONMENT
    return None


def _has_error_finding(findings: Iterable[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


# ReplayCheck.status values that fail a run: replay differs from eager, or the check could not compare them
REPLAY_FAILED = ("mismatch", "error")


def replay_failed(replay: ReplayCheck | None) -> bool:
    """A replay check that found replay differing from eager ("mismatch") or could not compare the two ("error"):
    a problem (exit 1) for `capture`, `lint`, `cgtool.check`/`assert_capturable` and a run on ranks alike."""
    return replay is not None and replay.status in REPLAY_FAILED


def replay_not_compared(replay: ReplayCheck | None) -> str:
    """Lint's words for a replay check that could not compare (status "error": the capture worked, the check did
    not finish), which fails the script as `capture` fails it; "" otherwise. A mismatch needs none: it is CG503,
    an error finding (checks/capture.py)."""
    if replay is None or not replay_failed(replay) or replay.status == "mismatch":
        return ""
    return f"replay check failed: {replay.note or 'replay was not compared with eager'}"


def capture_exit(report: Report, failure: str | None) -> ExitCode:
    """`capture` (and `lint`-like runs of one report): 130 interrupted; 4 the worker failed; 2 usage; 3 environment;
    1 script errors, error findings or a replay mismatch (or a check that could not compare); 3 a CPU-only run that found nothing; 0 captured or
    compiled and clean; 1 otherwise."""
    from cgtool.model.report import CAPTURED, COMPILED, CPU_ONLY, WORKER_FAILED

    if failure == INTERRUPTED:
        return ExitCode.INTERRUPTED
    if report.status == WORKER_FAILED:
        return ExitCode.WORKER
    by_type = _by_error_type(report.errors)
    if by_type is not None:
        return by_type
    if report.errors or _has_error_finding(report.findings):
        return ExitCode.PROBLEMS
    if replay_failed(report.replay):
        return ExitCode.PROBLEMS
    if report.status == CPU_ONLY:
        return ExitCode.ENVIRONMENT
    return ExitCode.OK if report.status in (CAPTURED, COMPILED) else ExitCode.PROBLEMS


def distributed_exit(report: DistReport | None, failure: str | None, ranks: list[RankResult]) -> ExitCode:
    """A run on ranks (`--nproc-per-node`, torchrun): 130 interrupted; 4 the launcher failed; on a rank other than 0
    under the user's torchrun (no merged report) 0, 1 or 3 (CPU only) by its own result; 2 a rank's usage error; 4 a timeout no
    error finding explains (a hang); 1 errors, error findings, a failed rank or a replay mismatch; 3 every rank ran
    on the CPU only; 0 otherwise."""
    if failure == INTERRUPTED:
        return ExitCode.INTERRUPTED
    if failure == LAUNCHER:
        return ExitCode.WORKER
    if report is None:  # a rank other than 0 under the user's torchrun: its own result
        rank = ranks[0] if ranks else None
        if rank is None or rank.failed:
            return ExitCode.PROBLEMS
        # as rank 0 says for the run: 3 when it ran on CPU only (then every torchrun agent sees its worker end
        # alike and leaves at once, instead of waiting at torchrun's exit barrier for an agent that failed)
        return ExitCode.ENVIRONMENT if rank.report is not None and rank.report.status == "cpu-only" else ExitCode.OK
    reports = [r.report for r in report.ranks]
    if any(e.type == "usage" for r in reports if r for e in r.errors):
        return ExitCode.USAGE
    problems = (report.errors or _has_error_finding(report.all_findings())
                or any(r.failed for r in report.ranks)
                or any(replay_failed(r.replay) for r in reports if r))
    if failure == TIMEOUT and not _has_error_finding(report.all_findings()):
        return ExitCode.WORKER  # a hang cgtool cannot explain: as a single worker's timeout
    if problems:
        return ExitCode.PROBLEMS
    if all(r is not None and r.status == "cpu-only" for r in reports):
        return ExitCode.ENVIRONMENT
    return ExitCode.OK


def dist_has_problems(report: DistReport) -> bool:
    """Whether the merged report of a run on ranks fails it (exit 1 or 2, as `distributed_exit` decides): what its
    verdict line and page colour red. A finding that is not an error (a refuted or informational one) is none."""
    return distributed_exit(report, None, []) in (ExitCode.PROBLEMS, ExitCode.USAGE)


def bench_exit(errors: Iterable[ErrorRecord], measured: bool, failure: str | None, regressed: bool) -> ExitCode:
    """`bench`: 130 interrupted; 4 the worker failed; 2 usage; 3 environment (no CUDA device); 1 a size failed,
    nothing was measured, or `--fail-if-slower` found a regression; 0 measured."""
    errors = list(errors)
    if failure == INTERRUPTED:
        return ExitCode.INTERRUPTED
    if failure is not None:
        return ExitCode.WORKER
    by_type = _by_error_type(errors)
    if by_type is not None:
        return by_type
    if errors or not measured or regressed:
        return ExitCode.PROBLEMS
    return ExitCode.OK


def bench_partial_exit(pieces: Piecewise | None, modules: ModuleMap | None, errors: list[object],
                       failure: str | None) -> ExitCode:
    """`bench --piecewise / --modules`: 130 interrupted; 4 the worker failed; 0 when every section asked for was
    measured (or piecewise is not possible for this step) without errors; 1 otherwise."""
    from cgtool.model.partial import MEASURED, NOT_POSSIBLE

    if failure == INTERRUPTED:
        return ExitCode.INTERRUPTED
    if failure is not None:
        return ExitCode.WORKER
    measured = [x for x in (pieces, modules) if x is not None]
    if measured and all(x.status in (MEASURED, NOT_POSSIBLE) for x in measured) and not errors:
        return ExitCode.OK
    return ExitCode.PROBLEMS


def lint_exit(interrupted: bool, error_findings: int, failed_scripts: int, stop: str = CTRL_C) -> int:
    """`lint`: interrupted: 128 + the signal's number (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP); 1 an error-severity
    finding or a script that could not be analysed; 0 otherwise."""
    if interrupted:
        return interrupted_status(stop)
    return ExitCode.PROBLEMS if error_findings or failed_scripts else ExitCode.OK
