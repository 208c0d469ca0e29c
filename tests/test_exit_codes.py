"""cgtool/model/exit_codes.py: the one place each command's result becomes an exit code; every code of every ladder,
on plain records (the CLI tests run the real commands: test_cli_capture.py, test_cli_bench.py, test_lint_run.py)."""

from __future__ import annotations

from cgtool.errors import ExitCode
from cgtool.model.exit_codes import bench_exit, bench_partial_exit, capture_exit, distributed_exit, lint_exit
from cgtool.model.partial import FAILED, MEASURED, NOT_POSSIBLE, ModuleMap, Piecewise
from cgtool.model.ranks import DistReport, RankResult
from cgtool.model.report import (CAPTURE_FAILED, CAPTURED, COMPILED, CPU_ONLY, SCRIPT_ERROR, WORKER_FAILED,
                                 ErrorRecord, ReplayCheck, Report)
from cgtool.model.rules import finding


def _report(status: str = CAPTURED, errors: tuple[str, ...] = (), findings: tuple[str, ...] = (),
            replay: str | None = None) -> Report:
    r = Report(script="s.py", entry="step", status=status)
    r.errors = [ErrorRecord("setup", t, "m") for t in errors]
    r.findings = [finding("CG101", severity=s) for s in findings]
    r.replay = None if replay is None else ReplayCheck(replay, "inputs(4)")
    return r


def test_every_code_documented():
    assert [(c.name, int(c)) for c in ExitCode] == [("OK", 0), ("PROBLEMS", 1), ("USAGE", 2), ("ENVIRONMENT", 3),
                                                     ("WORKER", 4), ("INTERRUPTED", 130)]
    import inspect

    lines = [line.strip() for line in inspect.getsource(ExitCode).splitlines()]
    for c in ExitCode:  # a documentation comment (`#: ...`) right above each member
        assert lines[lines.index(f"{c.name} = {int(c)}") - 1].startswith("#: "), c


def test_capture_exit_codes():
    assert capture_exit(_report(), None) == ExitCode.OK
    assert capture_exit(_report(COMPILED), None) == ExitCode.OK
    assert capture_exit(_report(findings=("warning", "info")), None) == ExitCode.OK
    assert capture_exit(_report(findings=("error",)), None) == ExitCode.PROBLEMS
    assert capture_exit(_report(replay="mismatch"), None) == ExitCode.PROBLEMS
    assert capture_exit(_report(CAPTURE_FAILED), None) == ExitCode.PROBLEMS
    assert capture_exit(_report(SCRIPT_ERROR, errors=("RuntimeError",)), None) == ExitCode.PROBLEMS
    assert capture_exit(_report(SCRIPT_ERROR, errors=("usage",)), None) == ExitCode.USAGE
    assert capture_exit(_report(SCRIPT_ERROR, errors=("environment",)), None) == ExitCode.ENVIRONMENT
    assert capture_exit(_report(CPU_ONLY), None) == ExitCode.ENVIRONMENT  # nothing found, but no CUDA device
    assert capture_exit(_report(CPU_ONLY, findings=("error",)), None) == ExitCode.PROBLEMS
    assert capture_exit(_report(WORKER_FAILED, errors=("crash",)), "crash") == ExitCode.WORKER
    assert capture_exit(_report(WORKER_FAILED, errors=("timeout",)), "timeout") == ExitCode.WORKER
    assert capture_exit(_report(WORKER_FAILED, errors=("interrupted",)), "interrupted") == ExitCode.INTERRUPTED
    # usage wins over other problems; a worker that failed wins over usage
    assert capture_exit(_report(SCRIPT_ERROR, errors=("usage", "RuntimeError"), findings=("error",)), None) == 2
    assert capture_exit(_report(WORKER_FAILED, errors=("usage",)), "crash") == ExitCode.WORKER


def _ranks(*reports: Report | None) -> DistReport:
    return DistReport("s.py", "step", len(reports), [RankResult(i, r) for i, r in enumerate(reports)])


def test_distributed_exit_codes():
    ok = _ranks(_report(), _report())
    assert distributed_exit(ok, None, []) == ExitCode.OK
    assert distributed_exit(ok, "interrupted", []) == ExitCode.INTERRUPTED
    assert distributed_exit(ok, "launcher", []) == ExitCode.WORKER
    assert distributed_exit(_ranks(_report(), _report(SCRIPT_ERROR, errors=("usage",))), None, []) == ExitCode.USAGE
    assert distributed_exit(_ranks(_report(), _report(findings=("error",))), None, []) == ExitCode.PROBLEMS
    assert distributed_exit(_ranks(_report(), None), None, []) == ExitCode.PROBLEMS  # a rank was stopped
    assert distributed_exit(_ranks(_report(), _report(replay="mismatch")), None, []) == ExitCode.PROBLEMS
    assert distributed_exit(_ranks(_report(), _report()), "timeout", []) == ExitCode.WORKER  # a hang nothing explains
    assert distributed_exit(_ranks(_report(), _report(findings=("error",))), "timeout", []) == ExitCode.PROBLEMS
    assert distributed_exit(_ranks(_report(CPU_ONLY), _report(CPU_ONLY)), None, []) == ExitCode.ENVIRONMENT
    # a rank other than 0 under the user's torchrun: no merged report, its own result
    assert distributed_exit(None, None, [RankResult(1, _report())]) == ExitCode.OK
    assert distributed_exit(None, None, [RankResult(1, _report(CAPTURE_FAILED))]) == ExitCode.PROBLEMS
    assert distributed_exit(None, None, []) == ExitCode.PROBLEMS


def test_bench_exit_codes():
    err = ErrorRecord("capture", "RuntimeError", "m")
    assert bench_exit((), True, None, False) == ExitCode.OK
    assert bench_exit((), True, None, True) == ExitCode.PROBLEMS  # --fail-if-slower found a regression
    assert bench_exit((), False, None, False) == ExitCode.PROBLEMS  # nothing measured
    assert bench_exit((err,), True, None, False) == ExitCode.PROBLEMS  # a size failed
    assert bench_exit((ErrorRecord("device", "environment", "no CUDA"),), False, None, False) == ExitCode.ENVIRONMENT
    assert bench_exit((ErrorRecord("load", "usage", "no step"), err), False, None, False) == ExitCode.USAGE
    assert bench_exit((), False, "crash", False) == ExitCode.WORKER
    assert bench_exit((), False, "timeout", False) == ExitCode.WORKER
    assert bench_exit((), False, "interrupted", False) == ExitCode.INTERRUPTED


def test_bench_partial_exit_codes():
    measured, impossible, failed = Piecewise(MEASURED, "m"), Piecewise(NOT_POSSIBLE, "m"), Piecewise(FAILED, "m")
    modules = ModuleMap(MEASURED, 1)
    assert bench_partial_exit(measured, None, [], None) == ExitCode.OK
    assert bench_partial_exit(impossible, modules, [], None) == ExitCode.OK
    assert bench_partial_exit(failed, modules, [], None) == ExitCode.PROBLEMS
    assert bench_partial_exit(measured, None, [{"phase": "x"}], None) == ExitCode.PROBLEMS
    assert bench_partial_exit(None, None, [], None) == ExitCode.PROBLEMS  # nothing came back
    assert bench_partial_exit(measured, None, [], "crash") == ExitCode.WORKER
    assert bench_partial_exit(measured, None, [], "interrupted") == ExitCode.INTERRUPTED


def test_lint_exit_codes():
    assert lint_exit(False, 0, 0) == ExitCode.OK
    assert lint_exit(False, 1, 0) == ExitCode.PROBLEMS
    assert lint_exit(False, 0, 1) == ExitCode.PROBLEMS  # a script that could not be analysed
    assert lint_exit(True, 0, 0) == ExitCode.INTERRUPTED


def test_a_replay_check_that_could_not_compare_fails_lint_check_and_assert_capturable_as_it_fails_capture(monkeypatch):
    """One decision (exit_codes.replay_failed): capture exits 1 when the replay check could not compare (status
    "error"), and lint, cgtool.check and assert_capturable failed nothing for the same report (they passed)."""
    import pytest

    import cgtool.testing
    from cgtool.api.report import CheckReport
    from cgtool.lint.run import LintOptions, script_result
    from cgtool.model.exit_codes import replay_failed, replay_not_compared
    from cgtool.model.lint_result import LintResult
    from cgtool.testing import NotCapturable, failure_message

    note = "the replay check could not compare replay with eager (RuntimeError: boom); the capture itself worked"
    report = _report()
    report.device = "cuda"
    report.replay = ReplayCheck("error", "inputs(4)", (), note)
    assert replay_failed(report.replay) and capture_exit(report, None) == ExitCode.PROBLEMS
    assert replay_not_compared(report.replay) == f"replay check failed: {note}"
    assert replay_not_compared(ReplayCheck("mismatch", "inputs(4)")) == ""  # a mismatch is CG503, an error finding
    assert replay_not_compared(ReplayCheck("match", "inputs(4)")) == replay_not_compared(None) == ""
    result = script_result("s.py", report, LintOptions())
    assert result.failed and result.errors == [f"replay check failed: {note}"]
    assert LintResult(scripts=[result]).exit_code == capture_exit(report, None) == ExitCode.PROBLEMS
    checked = CheckReport(report, result, "0")
    assert not checked.passed and "replay check failed" in failure_message(checked)
    monkeypatch.setattr(cgtool.testing, "check", lambda target, **options: checked)  # the worker's answer
    with pytest.raises(NotCapturable, match="replay check failed"):
        cgtool.testing.assert_capturable("s.py")
    report.replay = ReplayCheck("match", "inputs(4)")
    assert not script_result("s.py", report, LintOptions()).failed and capture_exit(report, None) == ExitCode.OK


def test_lint_on_ranks_keeps_a_ranks_failed_replay_check():
    """`lint --nproc-per-node N` makes one Report of the ranks: a rank's replay check that could not compare is
    kept in it (named by rank), so lint fails the script as `capture --nproc-per-node N` exits 1."""
    from cgtool.lint.run import LintOptions, script_result
    from cgtool.worker.distributed import _failed_replay

    bad = _report()
    bad.replay = ReplayCheck("error", "inputs(12)", (), "could not compare")
    good = _report(replay="match")
    dist = _ranks(good, bad)
    assert distributed_exit(dist, None, []) == ExitCode.PROBLEMS
    kept = _failed_replay(dist)
    assert kept is not None and kept.status == "error" and kept.note == "rank 1: could not compare"
    merged = _report()
    merged.replay = kept
    assert script_result("s.py", merged, LintOptions(nproc=2)).errors == ["replay check failed: rank 1: could not compare"]
    assert _failed_replay(_ranks(good, _report())) is None


def test_lint_fails_a_script_whose_cpu_analysis_stopped_early():
    """The tracer stopped recording (a cgtool bug): the findings after that point are missing, so lint fails the
    script with the reason instead of printing "0 errors" for a partial analysis (capture shows the same Skip)."""
    from cgtool.lint.run import LintOptions, script_result
    from cgtool.model.lint_result import LintResult
    from cgtool.model.report_parts import TRACER_STOPPED, Skip

    report = _report()
    text = "part of the CPU analysis: its tracer stopped recording (RuntimeError: boom); findings after that point are missing"
    report.skipped.append(Skip(TRACER_STOPPED, text))
    result = script_result("s.py", report, LintOptions())
    assert result.failed and result.errors == [text]
    assert LintResult(scripts=[result]).exit_code != ExitCode.OK
    report.skipped.clear()
    assert not script_result("s.py", report, LintOptions()).failed
