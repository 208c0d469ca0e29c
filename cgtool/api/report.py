"""The result of `cgtool.check`: the step's full report (the same `Report` that `cgtool capture` writes) with lint's
view of it (findings filtered and suppressed as `cgtool lint` does), as text, and as HTML in a notebook."""

from __future__ import annotations

import html
from dataclasses import dataclass

from cgtool.model.finding import Finding
from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.report import Report


@dataclass(frozen=True)
class CheckReport:
    """What `cgtool.check` learned about one step. `passed` is lint's verdict: no error-severity finding and the
    step could be analysed (warnings and notes do not fail it)."""

    report: Report  # everything the worker learned (findings unfiltered), as report.json has it
    result: ScriptResult  # lint's record: findings after --select/--ignore and `# cgtool: ignore[...]`
    version: str = ""

    @property
    def findings(self) -> list[Finding]:
        return list(self.result.findings)

    @property
    def errors(self) -> list[str]:
        """Why the step could not be analysed (the script raised, the worker died), one line each."""
        return list(self.result.errors)

    @property
    def device(self) -> str:
        return self.result.device

    @property
    def status(self) -> str:
        """The report's status: captured, capture-failed, cpu-only, script-error, worker-failed, compiled."""
        return self.report.status

    @property
    def passed(self) -> bool:
        return self.lint_result().exit_code == 0

    def problems(self) -> list[Finding]:
        """The findings that fail the check (severity error)."""
        return [f for f in self.result.findings if f.severity == "error"]

    def lint_result(self) -> LintResult:
        """As `cgtool lint` would report this one script (every lint format renders it)."""
        return LintResult(scripts=[self.result], version=self.version, device=self.result.device)

    def text(self, color: bool = False) -> str:
        """`cgtool lint`'s text: each finding as `file:line: error: CG101 [sync] message`, its source line and its
        fix, then the summary and the rules this machine could not check."""
        from cgtool.render.text import render_text

        return render_text(self.lint_result(), color=color)

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        """Jupyter's rich display: the HTML report (cgtool/render/html.py), or the text report in a <pre> where the
        HTML renderer is not available."""
        try:
            from cgtool.render.html import render_report_html
        except ImportError:
            return f"<pre>{html.escape(self.text())}</pre>"
        return render_report_html(self.report)
