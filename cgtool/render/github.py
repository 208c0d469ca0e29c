"""`cgtool lint --format github`: GitHub Actions workflow commands that annotate the offending lines.

Each finding becomes `::error file=F,line=N,title=CG101 sync::message` (warning/notice by severity),
escaped as the Actions toolkit does (other control characters written visibly, as `\\x1b`); a plain summary
line follows.
"""

from __future__ import annotations

from pathlib import Path

from cgtool.errors import interrupted
from cgtool.model.lint_result import LintResult
from cgtool.render.console import escape_controls
from cgtool.render.paths import display_path
from cgtool.render.text import summary_line

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    """Escape a command's message (the text after `::`): `%`, CR and LF as the Actions toolkit does, then every
    other control character (ESC, BEL, NUL, C1, DEL: a script's or kernel's name may hold them) written as a
    visible `\\x1b`, as every other format writes them (render/console.escape_controls); tab stays."""
    return escape_controls(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(s: str) -> str:
    """Escape a command property value (file=, title=): also `:` and `,`."""
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: str | int | None) -> str:
    """One `::command key=value,...::message` line; properties that are None are left out."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{command}{' ' + props if props else ''}::{escape_data(message)}"


def render_github(result: LintResult, *, base_dir: str | Path | None = None) -> str:
    """Annotations for every finding, script error and skipped rule, then the summary; ends in a newline."""
    lines = []
    for script in result.scripts:
        for f in script.findings:
            message = f"{f.text}{f.status}" if not f.hint else f"{f.text}{f.status}\nFix: {f.hint}"
            lines.append(workflow_command(
                COMMANDS.get(f.severity, "warning"), message,
                file=display_path(f.file or script.path, base_dir),
                line=f.line if f.line is not None and f.line >= 1 else None,
                title=f"{f.rule} {f.category}",
            ))
        if script.failed:
            for message in script.errors or ["could not be analysed"]:
                lines.append(workflow_command("error", message, file=display_path(script.path, base_dir),
                                              title="cgtool could not analyse this script"))
    if result.skipped_rules:
        reason = result.skipped_reason or f"they need a CUDA device; this run was on {result.device}"
        lines.append(workflow_command("notice", f"{', '.join(result.skipped_rules)} not checked: {reason}",
                                      title="cgtool rules not checked on this machine"))
    if result.interrupted:
        lines.append(workflow_command("warning", f"{len(result.unchecked)} script(s) not checked: "
                                      f"{', '.join(result.unchecked)}", title=f"cgtool lint was {interrupted(result.stop)}"))
    lines.append(f"cgtool lint: {escape_controls(summary_line(result))}")
    return "\n".join(lines) + "\n"
