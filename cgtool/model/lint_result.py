"""The result of `cgtool lint`: per-script findings, errors and skipped rules; every lint renderer reads it.

The JSON form (LintResult.to_json) is what `cgtool lint --format json` prints; LINT_SCHEMA_VERSION
versions it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cgtool.errors import CTRL_C
from cgtool.model.codec import Record, meta
from cgtool.model.exit_codes import lint_exit
from cgtool.model.finding import Finding

LINT_SCHEMA_VERSION = 2  # 2: findings as in report.json schema 3 (`reason`, `kind`, `origin`, `predicts`)
READABLE_LINT_SCHEMAS = (1, 2)

# The output formats of `cgtool lint`; cgtool/render/lint_formats.py has a renderer for each.
LINT_FORMATS = ("text", "json", "sarif", "github", "junit", "gitlab")

# ScriptResult.status values
ANALYSED = "analysed"  # the analysis ran; findings (possibly none) are complete for this device
ERROR = "error"  # the script could not be analysed (load failure, crash, timeout); see errors


@dataclass(frozen=True)
class ScriptResult(Record):
    """What lint learned about one script."""

    path: str  # the script as given or found, e.g. "samples/train_step.py"
    entry: str = "step"
    status: str = ANALYSED
    device: str = "cpu"  # "cuda" or "cpu": where the analysis ran
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # short messages, e.g. "SyntaxError at line 3: ..."
    skipped_rules: list[str] = field(default_factory=list)  # rule ids that could not run here
    skipped_reason: str = ""  # why, e.g. "no CUDA device: these rules need a captured graph"
    ranks_unchecked: list[str] = field(default_factory=list)  # cross-rank rules a world of one could not check

    @property
    def failed(self) -> bool:
        """True when the script could not be analysed."""
        return self.status == ERROR or bool(self.errors)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)


@dataclass(frozen=True)
class LintResult(Record):
    """Everything one `cgtool lint` run found, in the order the scripts were analysed."""

    JSON_ORDER = ("schema", "cgtool_version", "device", "summary", "scripts", "unchecked")
    JSON_COMPUTED = {"schema": lambda _: LINT_SCHEMA_VERSION, "summary": lambda r: r.summary}

    scripts: list[ScriptResult] = field(default_factory=list)
    version: str = field(default="", metadata=meta(key="cgtool_version"))  # cgtool version
    device: str = "cpu"  # "cuda" when the run had a GPU, else "cpu"
    # stopped by Ctrl-C, SIGTERM or SIGHUP: `scripts` holds what finished before it (JSON: in `summary`)
    interrupted: bool = field(default=False, metadata=meta(written=False))
    # what stopped an interrupted run: "Ctrl-C", "SIGTERM" or "SIGHUP" (errors.interrupted; JSON: in `summary`)
    stop: str = field(default=CTRL_C, metadata=meta(written=False))
    unchecked: list[str] = field(default_factory=list)  # scripts found but not analysed (interrupted)

    def findings(self) -> Iterator[tuple[ScriptResult, Finding]]:
        """Every finding with the script it came from."""
        for script in self.scripts:
            for f in script.findings:
                yield script, f

    def count(self, severity: str) -> int:
        return sum(s.count(severity) for s in self.scripts)

    @property
    def error_count(self) -> int:
        """Findings of severity "error" (these fail the CI gate)."""
        return self.count("error")

    @property
    def warning_count(self) -> int:
        return self.count("warning")

    @property
    def info_count(self) -> int:
        return self.count("info")

    @property
    def failed_scripts(self) -> list[ScriptResult]:
        """Scripts that could not be analysed."""
        return [s for s in self.scripts if s.failed]

    @property
    def skipped_rules(self) -> list[str]:
        """Rule ids that could not run for at least one script (on this device, or in a world of one), sorted."""
        return sorted({r for s in self.scripts for r in (*s.skipped_rules, *s.ranks_unchecked)})

    @property
    def world_of_one(self) -> list[ScriptResult]:
        """Scripts written for ranks that a plain run analysed as a world of one rank."""
        return [s for s in self.scripts if s.ranks_unchecked]

    @property
    def skipped_reason(self) -> str:
        """The first script's reason for skipping rules ("" when nothing was skipped)."""
        return next((s.skipped_reason for s in self.scripts if s.skipped_rules and s.skipped_reason), "")

    @property
    def exit_code(self) -> int:
        """128 + the stopping signal's number when interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP); else 0 when
        there is no error-severity finding and every script was analysed, 1 otherwise."""
        return lint_exit(self.interrupted, self.error_count, len(self.failed_scripts), self.stop)

    @property
    def summary(self) -> dict[str, Any]:
        """The counts and the exit code, as the JSON's `summary` has them."""
        return {
            "scripts": len(self.scripts),
            "failed_scripts": len(self.failed_scripts),
            "errors": self.error_count,
            "warnings": self.warning_count,
            "infos": self.info_count,
            "skipped_rules": self.skipped_rules,
            "exit_code": self.exit_code,
            "interrupted": self.interrupted,
            "interrupted_by": self.stop if self.interrupted else None,
        }

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        """Checks the schema; `interrupted` and what stopped the run come from `summary`."""
        schema = d.get("schema") if isinstance(d, Mapping) else None
        if schema not in READABLE_LINT_SCHEMAS:
            raise ValueError(f"lint result schema {schema!r} is not a supported version {READABLE_LINT_SCHEMAS}")
        summary = d.get("summary", {})
        return {**d, "interrupted": bool(summary.get("interrupted", False)),
                "stop": str(summary.get("interrupted_by") or CTRL_C)}
