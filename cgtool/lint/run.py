"""`cgtool lint`'s core: find the scripts, analyse each in its own worker, filter, collect a LintResult."""

from __future__ import annotations

import ast
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from cgtool.errors import CgtoolError, ExitCode
from cgtool.lint.filter import filter_findings, rule_enabled
from cgtool.model.job import CAPTURE, Job
from cgtool.model.lint_result import ANALYSED, ERROR, LintResult, ScriptResult
from cgtool.model.report import CAPTURE_FAILED, Report
from cgtool.model.rules import GPU_ONLY_RULES

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


def defines_function(path: str, name: str) -> bool:
    """True when the file defines `name` at top level (read with ast; nothing is imported)."""
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), path)
    except (SyntaxError, ValueError, OSError):
        return True  # let the analysis report the syntax error for this file
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in tree.body)


def find_scripts(paths: Sequence[str], entry: str) -> list[tuple[str, str]]:
    """(script, entry) pairs: files as given (`script.py:fn` names the entry of that file); folders
    searched recursively for .py files that define the entry function."""
    from cgtool.script.contract import parse_target

    found: list[tuple[str, str]] = []
    for target in paths:
        path, own_entry = parse_target(target, None)
        if not os.path.exists(path):
            raise CgtoolError(f"No such file or folder: {path}", ExitCode.USAGE)
        if os.path.isfile(path):
            found.append((path, own_entry if path != target else entry))
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for f in sorted(files):
                full = os.path.join(root, f)
                if f.endswith(".py") and f != "__init__.py" and defines_function(full, entry):
                    found.append((full, entry))
    return list(dict.fromkeys(found))


def lint_paths(paths: Sequence[str], opts: LintOptions) -> LintResult:
    from cgtool import __version__

    scripts = find_scripts(paths, opts.entry)
    if not scripts:
        raise CgtoolError(f"No scripts with a `{opts.entry}()` function under {', '.join(paths)}.", ExitCode.USAGE)
    with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        results = list(pool.map(lambda pe: lint_one(pe[0], opts, pe[1]), scripts))
    device = "cuda" if any(r.device == "cuda" for r in results) else "cpu"
    return LintResult(scripts=results, version=__version__, device=device)


def lint_one(path: str, opts: LintOptions, entry: str | None = None) -> ScriptResult:
    from cgtool.worker.client import report_from_outcome, run_job

    job = Job(CAPTURE, os.path.abspath(path), entry or opts.entry, force_cpu=opts.force_cpu,
              settings={"warmup": opts.warmup, "timing": False, "checks": True, "replay_check": True})
    if opts.nproc:
        from cgtool.worker.distributed import lint_report

        return script_result(path, lint_report(job, opts.nproc, opts.timeout), opts)
    outcome = run_job(job, opts.timeout)
    return script_result(path, report_from_outcome(job, outcome), opts)


def script_result(path: str, report: Report, opts: LintOptions) -> ScriptResult:
    """Turn a capture report into lint's per-script record (filtered and suppressed)."""
    findings = filter_findings(report.findings, opts.select, opts.ignore)
    errors = []
    for e in report.errors:
        if report.status == CAPTURE_FAILED and e.phase == "capture":
            continue  # a failed capture is a finding (CG501 or the root cause), not a script error
        frame = e.user_frame
        where = f" at {os.path.relpath(frame.file)}:{frame.line}" if frame else ""
        errors.append(f"{e.phase} failed{where}: {e.label}{e.message}")
    skipped: list[str] = []
    reason = ""
    if report.device != "cuda":
        skipped = [r for r in GPU_ONLY_RULES if rule_enabled(r, opts.select, opts.ignore)]
        reason = "no CUDA device: these rules need a real capture and replay"
    return ScriptResult(path=path, entry=report.entry, status=ERROR if errors else ANALYSED, device=report.device,
                        findings=findings, errors=errors, skipped_rules=skipped, skipped_reason=reason)
