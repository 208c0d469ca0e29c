"""`cgtool lint --format gitlab`: a GitLab Code Quality report (a JSON array of issues: description, check_name,
fingerprint, severity, location.path, location.lines.begin), for a job's `artifacts:reports:codequality`.

Paths are relative to `base_dir` (the repository root the job runs in). A fingerprint names the issue, not its
line: the rule, the file, the function, the line's text and the message (and a count among issues alike), so an
issue keeps its fingerprint when code above it moves and GitLab's merge-request widget does not show it as new.
A script that could not be analysed is a blocker issue at its first line, a script an interrupted run did not
reach an info issue; rules that could not run on this machine are no issues (they are in the text and SARIF
outputs)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cgtool.model.lint_result import LintResult
from cgtool.render.paths import display_path

SEVERITIES = {"error": "critical", "warning": "minor", "info": "info"}  # GitLab's: info minor major critical blocker
ANALYSIS_ERROR = "cgtool/analysis-error"  # check_name of a script cgtool could not analyse
NOT_CHECKED = "cgtool/not-checked"  # check_name of a script an interrupted run did not reach


def render_gitlab(result: LintResult, *, base_dir: str | Path | None = None) -> str:
    """The issues of every finding and script error, as a JSON array (ends in a newline)."""
    issues: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for script in result.scripts:
        for f in script.findings:
            path = display_path(f.file or script.path, base_dir)
            description = f"{f.rule} [{f.category}] {f.message}{f.status}" + (f" Fix: {f.hint}" if f.hint else "")
            identity = (f.rule, path, f.function or "", (f.source or "").strip(), f.message)
            issues.append(_issue(description, f.rule, SEVERITIES.get(f.severity, "minor"), path,
                                 f.line if f.line is not None and f.line >= 1 else 1, identity, seen))
        if script.failed:
            path = display_path(script.path, base_dir)
            for message in script.errors or ["could not be analysed"]:
                issues.append(_issue(f"cgtool could not analyse this script: {message}", ANALYSIS_ERROR, "blocker",
                                     path, 1, (ANALYSIS_ERROR, path, message), seen))
    for unchecked in result.unchecked if result.interrupted else ():
        path = display_path(unchecked, base_dir)
        issues.append(_issue("not checked: the run was interrupted (Ctrl-C)", NOT_CHECKED, "info", path, 1,
                             (NOT_CHECKED, path), seen))
    return json.dumps(issues, indent=2) + "\n"


def _issue(description: str, check: str, severity: str, path: str, line: int, identity: tuple[str, ...],
           seen: dict[str, int]) -> dict[str, Any]:
    key = "\x00".join(identity)
    count = seen[key] = seen.get(key, 0) + 1  # two issues alike (the same line twice) stay two fingerprints
    fingerprint = hashlib.sha256(f"{key}\x00{count}".encode()).hexdigest()
    return {"description": description, "check_name": check, "fingerprint": fingerprint, "severity": severity,
            "location": {"path": path, "lines": {"begin": line}}}
