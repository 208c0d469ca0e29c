"""Console rendering of findings and error records (shared by capture, lint and bench)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from cgtool.model.finding import CONFIRMED, EVIDENCE_WORDS, NOT_REACHED, REFUTED, UNTESTED, Finding
from cgtool.model.report import ErrorRecord

_COLOURS = {"error": "red", "warning": "yellow", "info": "blue"}
_EVIDENCE_COLOURS = {CONFIRMED: "red", REFUTED: "green", UNTESTED: "dim", NOT_REACHED: "dim"}
_EVIDENCE = {k: f"[{_EVIDENCE_COLOURS[k]}]{words}[/]" for k, words in EVIDENCE_WORDS.items()}
_WORDS = {"error": "error", "warning": "warning", "info": "note"}


def render_findings(findings: list[Finding], out: Console) -> None:
    for f in findings:
        colour = _COLOURS.get(f.severity, "white")
        word = escape(_WORDS.get(f.severity, f.severity))
        tag = f" ({_EVIDENCE[f.evidence]})" if f.evidence in _EVIDENCE else ""
        out.print(f"[bold]{escape(f.location)}[/]: [bold {colour}]{word}:[/] [{colour}]{f.rule} "
                  f"{escape('[' + f.category + ']')}[/] {escape(f.text)}{tag}", soft_wrap=True)
        if f.source:
            out.print(f"    [dim]{escape(f.source)}[/]", soft_wrap=True)
        if f.hint:
            out.print(f"    [cyan]fix:[/] {escape(f.hint)}", soft_wrap=True)


def render_errors(errors: list[ErrorRecord], out: Console) -> None:
    for e in errors:
        where = ""
        frame = e.user_frame
        if frame is not None:
            where = f" at {frame.file}:{frame.line} in {frame.function}()"
        out.print(f"[bold red]{escape(e.phase)} failed{escape(where)}:[/] {escape(e.label)}{escape(e.message)}", soft_wrap=True)
        for fr in e.frames:
            out.print(f'  File "{escape(fr.file)}", line {fr.line}, in {escape(fr.function)}', style="dim",
                      soft_wrap=True)
            if fr.source:
                out.print(f"    {escape(fr.source)}", style="dim", soft_wrap=True)
