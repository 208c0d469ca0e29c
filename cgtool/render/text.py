"""Human `cgtool lint` output: each finding with its source line and fix, then a summary and skipped rules."""

from __future__ import annotations

import io

from rich.text import Text

from cgtool.errors import interrupted
from cgtool.model.finding import Finding
from cgtool.model.lint_result import LintResult
from cgtool.model.rules import RULE_BY_ID, WORLD_OF_ONE
from cgtool.render.console import SafeConsole

COLOURS = {"error": "red", "warning": "yellow", "info": "blue"}
SEVERITY_WORDS = {"error": "error", "warning": "warning", "info": "note"}  # as compilers print them


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(result: LintResult) -> str:
    """One line: scripts checked, finding counts, scripts that could not be analysed."""
    with_findings = sum(1 for s in result.scripts if s.findings)
    counts = [_plural(result.error_count, "error"), _plural(result.warning_count, "warning")]
    if result.info_count:
        counts.append(_plural(result.info_count, "note"))
    line = f"{_plural(len(result.scripts), 'script')} checked on {result.device}: {', '.join(counts)}"
    if with_findings:
        line += f" in {_plural(with_findings, 'script')}"
    failed = len(result.failed_scripts)
    if failed:
        line += f"; {_plural(failed, 'script')} could not be analysed"
    if result.interrupted:
        line += f"; {interrupted(result.stop)}: {_plural(len(result.unchecked), 'script')} not checked"
    return line + "."


def finding_text(f: Finding, path: str) -> Text:
    """`path:line: error: CG101 [sync] message` (error, warning or note), then the source line and the fix,
    indented."""
    where = f"{path}:{f.line}" if f.line else path
    colour = COLOURS.get(f.severity, "")
    severity = SEVERITY_WORDS.get(f.severity, f.severity)
    text = Text.assemble((where, "bold"), ": ", (f"{severity}:", f"bold {colour}"), " ",
                         (f"{f.rule} [{f.category}]", colour), " ", f.text, (f.status, "dim"))
    if f.source and f.source.strip():
        text.append("\n    ").append(f.source.strip(), "dim")
    if f.hint:
        text.append("\n    ").append("fix:", "cyan").append(" " + f.hint)
    return text


def render_text(result: LintResult, *, color: bool = False, width: int = 100) -> str:
    """The lint result as text for a terminal or a CI log; ANSI colour only when `color`."""
    buf = io.StringIO()
    out = SafeConsole(file=buf, force_terminal=color, no_color=not color, color_system="standard" if color else None,
                  width=width, highlight=False, emoji=False)
    for script in result.scripts:
        for f in script.findings:  # a finding without a file belongs to the script it came from
            out.print(finding_text(f, f.file or script.path), soft_wrap=True)
        if script.failed:
            for message in script.errors or ["could not be analysed"]:
                out.print(Text.assemble((script.path, "bold"), ": ", ("error:", "bold red"), " ", message),
                          soft_wrap=True)
    if result.scripts and (any(s.findings for s in result.scripts) or result.failed_scripts):
        out.print()
    colour = "red" if result.exit_code else "green"
    out.print(Text(summary_line(result), style=f"bold {colour}"), soft_wrap=True)
    skipped = sorted({r for s in result.scripts for r in s.skipped_rules})
    if skipped:
        reason = result.skipped_reason or f"they need a CUDA device; this run was on {result.device}"
        _rule_list(out, f"Not checked on this machine ({reason}):", skipped)
    ones = result.world_of_one
    if ones:
        _rule_list(out, f"Not checked in a world of one rank ({_plural(len(ones), 'script')} written for ranks; "
                        f"{WORLD_OF_ONE}):", sorted({r for s in ones for r in s.ranks_unchecked}))
        out.print(Text("  run as one rank: " + ", ".join(s.path for s in ones)), soft_wrap=True)
    return buf.getvalue()


def _rule_list(out: SafeConsole, heading: str, rule_ids: list[str]) -> None:
    out.print(Text(heading, style="yellow"), soft_wrap=True)
    for rule_id in rule_ids:
        rule = RULE_BY_ID.get(rule_id)
        out.print(Text(f"  {rule_id} {rule.title}" if rule else f"  {rule_id}"), soft_wrap=True)
