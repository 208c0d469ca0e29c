"""Assertions for the user's own test suite: `assert_capturable(step or script)` fails a test with cgtool's
findings (file:line, rule, message, the line, its fix) as the message (docs/python-api.md). The pytest plugin
(cgtool/testing/plugin.py) offers the same as the `cgtool_check` fixture."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from cgtool.api import CheckReport, check


class NotCapturable(AssertionError):
    """assert_capturable's failure; `report` is the CheckReport behind it."""

    def __init__(self, message: str, report: CheckReport) -> None:
        super().__init__(message)
        self.report = report


def assert_capturable(target: str | os.PathLike[str] | Callable[..., Any], **options: Any) -> CheckReport:
    """Check `target` (a step function or a script path; `options` as `cgtool.check` takes them) and return its
    CheckReport; raise NotCapturable (an AssertionError) when it has an error-severity finding or could not be
    analysed. Warnings and notes pass, as they pass `cgtool lint`."""
    __tracebackhide__ = True  # pytest shows the test's line, not cgtool's
    report = check(target, **options)
    if not report.passed:
        raise NotCapturable(failure_message(report), report)
    return report


def failure_message(report: CheckReport) -> str:
    """The assertion message: a headline naming the step, each finding as `cgtool lint` prints it (file:line, rule,
    message, the source line, the fix), why the step could not be analysed, and the rules this machine could not
    check, on one line."""
    from cgtool.render.text import finding_text

    script = report.result
    problems = len(report.problems())
    if report.errors:
        head = f"cgtool could not analyse {script.path}:{script.entry} on {report.device}"
    else:
        head = (f"{script.path}:{script.entry} is not capturable as a CUDA graph ({problems} error "
                f"finding{'s' * (problems != 1)}, checked on {report.device})")
    lines = [head + ":"]
    lines += [finding_text(f, f.file or script.path).plain for f in script.findings]
    lines += [f"{script.path}: error: {e}" for e in script.errors]
    if script.skipped_rules:
        lines.append(f"Not checked on this machine ({script.skipped_reason}): {', '.join(script.skipped_rules)}")
    return "\n".join(lines)
