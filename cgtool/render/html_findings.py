"""Findings, errors and what was not checked, as HTML: each finding with its line (linked to the page's source
listing), its source text, its fix and what the real capture said about it."""

from __future__ import annotations

from collections.abc import Sequence

from cgtool.model.finding import EVIDENCE_WORDS, Finding
from cgtool.model.report import ErrorRecord
from cgtool.render.html_page import esc
from cgtool.render.html_source import SourceLines

WORDS = {"error": "error", "warning": "warning", "info": "note"}


def finding_html(f: Finding, src: SourceLines | None) -> str:
    where = src.link(f.file, f.line, f.location) if src is not None else esc(f.location)
    ev = (f' <span class="ev {esc(f.evidence)}">{esc(EVIDENCE_WORDS[f.evidence])}</span>'
          if f.evidence in EVIDENCE_WORDS else "")
    fn = f' <span class="muted">in {esc(f.function)}()</span>' if f.function else ""
    parts = [f'<div class="finding {esc(f.severity)}" data-rule="{esc(f.rule)}">',
             (f'<div><span class="sev {esc(f.severity)}">{esc(WORDS.get(f.severity, f.severity))}</span> '
              f'<span class="rule">{esc(f.rule)}</span> <span class="cat">[{esc(f.category)}]</span> {where}{fn}{ev}</div>'),
             f'<div class="msg">{esc(f.message)}</div>']
    if f.source:
        num = f"{f.line:>5} │ " if f.line else ""
        parts.append(f"<pre>{esc(num + f.source)}</pre>")
    if f.library:
        parts.append(f'<div class="lib">issued in a library at {esc(f.library)}</div>')
    if f.hint:
        parts.append(f'<div class="fix"><b>fix:</b> {esc(f.hint)}</div>')
    parts.append("</div>")
    return "".join(parts)


def findings_html(findings: Sequence[Finding], src: SourceLines | None, none_text: str = "No finding.") -> str:
    if not findings:
        return f'<p class="muted">{esc(none_text)}</p>'
    return "".join(finding_html(f, src) for f in findings)


def error_html(e: ErrorRecord, src: SourceLines | None) -> str:
    frame = e.user_frame
    where = ""
    if frame is not None:
        link = src.link(frame.file, frame.line, f"{frame.file}:{frame.line}") if src else esc(f"{frame.file}:{frame.line}")
        where = f" at {link} in {esc(frame.function)}()"
    trace = "".join(f'  File "{fr.file}", line {fr.line}, in {fr.function}\n' + (f"    {fr.source}\n" if fr.source else "")
                    for fr in e.frames)
    passed = (f'<div class="muted">the capture got past: {esc(", ".join(e.passed))}</div>' if e.passed else "")
    return (f'<div class="finding error"><div><span class="sev error">{esc(e.phase)} failed</span>{where}</div>'
            f'<div class="msg">{esc(e.label + e.message)}</div>' + (f"<pre>{esc(trace)}</pre>" if trace else "")
            + passed + "</div>")


def errors_html(errors: Sequence[ErrorRecord], src: SourceLines | None) -> str:
    return "".join(error_html(e, src) for e in errors)


def severity_counts(findings: Sequence[Finding]) -> str:
    """`2 errors, 1 warning` (or `none`)."""
    out = []
    for sev in ("error", "warning", "info"):
        n = sum(1 for f in findings if f.severity == sev)
        if n:
            word = WORDS[sev]
            out.append(f"{n} {word}{'s' if n != 1 else ''}")
    return ", ".join(out) or "none"


def not_checked_html(skipped: Sequence[str], rules: Sequence[str] = (), why: str = "") -> str:
    """What could not run here, with why: the report's skipped items and rule ids."""
    items = [f"<li>{esc(s)}</li>" for s in skipped]
    if rules:
        items.append(f"<li>rules not checked{f' ({esc(why)})' if why else ''}: "
                     + ", ".join(f"<code>{esc(r)}</code>" for r in rules) + "</li>")
    return f"<ul>{''.join(items)}</ul>" if items else '<p class="muted">Everything ran.</p>'
