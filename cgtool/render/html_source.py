"""The page's source listing: every line a report names (findings, errors, graph nodes), each with an anchor the
findings and the graph's nodes link to, its rules and its replay GPU time; the whole file where the caller gave
its text (the `cgtool report` and `--html` commands read the script), else the named lines with the text the
report recorded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cgtool.render.html_page import esc
from cgtool.render.units import fmt_us

MAX_FULL_LINES = 4000  # a longer file shows only its named lines (and a little context)
CONTEXT = 2  # lines shown around each named line when only those are shown


@dataclass
class SourceLines:
    """The lines a page shows, by file; `prefix` keeps anchors unique where several reports share a page."""

    prefix: str = ""
    full: Mapping[str, str] = field(default_factory=dict)  # file -> its whole text (given by the command)
    files: dict[str, dict[int, str]] = field(default_factory=dict)  # file -> line -> text recorded in the report
    marks: dict[tuple[str, int], list[tuple[str, str]]] = field(default_factory=dict)  # (file, line) -> (rule, severity)
    times: dict[tuple[str, int], float] = field(default_factory=dict)  # (file, line) -> replay GPU µs of its nodes

    def add(self, file: str | None, line: int | None, text: str | None = "") -> str | None:
        """Name a line (its anchor comes back); a line of no file or number has none."""
        if not file or not line or line < 1:
            return None
        known = self.files.setdefault(file, {})
        if text or line not in known:
            known[line] = (text or known.get(line, "")).rstrip("\n")
        return self.anchor(file, line)

    def include(self, file: str) -> None:
        """List a whole file the caller gave (the script itself), named lines or not."""
        if file in self.full:
            self.files.setdefault(file, {})

    def mark(self, file: str | None, line: int | None, rule: str, severity: str) -> None:
        if self.add(file, line) is not None:
            self.marks.setdefault((file, line), []).append((rule, severity))  # type: ignore[arg-type]

    def time(self, file: str, line: int, us: float) -> None:
        if self.add(file, line) is not None:
            self.times[(file, line)] = self.times.get((file, line), 0.0) + us

    def anchor(self, file: str, line: int) -> str:
        return f"{self.prefix}L{list(self.files).index(file)}-{line}"

    def link(self, file: str | None, line: int | None, text: str) -> str:
        """`text` as a link to the line's place in the listing (plain text where the line has no place)."""
        a = self.add(file, line)
        return f'<a href="#{esc(a)}">{esc(text)}</a>' if a else esc(text)

    def listing_html(self) -> str:
        if not self.files:
            return '<p class="muted">The report names no line of the script.</p>'
        parts = []
        for file, known in self.files.items():
            parts.append(f'<div class="file">{esc(file)}</div>')
            text = self.full.get(file)
            lines = text.splitlines() if text is not None else None
            if lines is not None and len(lines) <= MAX_FULL_LINES:
                shown = list(range(1, len(lines) + 1))
            else:
                near = {n + d for n in known for d in range(-CONTEXT, CONTEXT + 1)} if lines else set(known)
                shown = sorted(n for n in near if n >= 1 and (lines is None or n <= len(lines)))
            rows, last = [], 0
            for n in shown:
                if last and n > last + 1:
                    rows.append('<tr class="gap"><td class="ln">⋮</td><td></td><td></td><td></td></tr>')
                code = lines[n - 1] if lines is not None and n <= len(lines) else known.get(n, "")
                rows.append(self._row(file, n, code, named=n in known))
                last = n
            parts.append(f'<table class="src">{"".join(rows)}</table>')
        if not self.full:
            parts.append('<p class="muted">Only the lines the report names are shown, with the text it recorded '
                         '(the page was made without the script\'s file).</p>')
        return "".join(parts)

    def _row(self, file: str, n: int, code: str, named: bool) -> str:
        key = (file, n)
        marks = self.marks.get(key, [])
        badges = " ".join(f'<span class="sev {esc(sev)}">{esc(rule)}</span>' for rule, sev in dict.fromkeys(marks))
        us = self.times.get(key)
        cls = "hit" if marks else ("timed" if us else "")
        ident = f' id="{esc(self.anchor(file, n))}"' if named else ""
        return (f'<tr{ident}{f" class={cls}" if cls else ""}><td class="ln">{n}</td><td class="mk">{badges}</td>'
                f'<td class="tm">{esc(fmt_us(us)) if us else ""}</td><td class="code">{esc(code)}</td></tr>')
