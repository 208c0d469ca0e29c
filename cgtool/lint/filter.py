"""Which findings lint reports: --select/--ignore rule ids or prefixes, and `# cgtool: ignore[...]` comments.

A pattern is a rule id ("CG201") or a prefix of one ("CG2", "CG"): it matches every rule id that starts
with it, case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.finding import Finding
from cgtool.model.rules import RULES

_DIRECTIVE = re.compile(r"cgtool:\s*ignore\b(\[(?P<ids>[^\]]*)\])?", re.IGNORECASE)


def normalize_patterns(patterns: Iterable[str], where: str) -> tuple[str, ...]:
    """Upper-cased patterns; CgtoolError (exit 2) for one that matches no rule, naming `where`."""
    out = []
    for raw in patterns:
        p = raw.strip().upper()
        if not p or not any(r.id.startswith(p) for r in RULES):
            known = ", ".join(r.id for r in RULES)
            raise CgtoolError(f"{where}: unknown rule id or prefix {raw!r} (known rules: {known})", ExitCode.USAGE)
        out.append(p)
    return tuple(out)


def _matches(rule_id: str, patterns: Iterable[str]) -> bool:
    rid = rule_id.upper()
    return any(rid.startswith(p.upper()) for p in patterns)


def rule_enabled(rule_id: str, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> bool:
    """True when `rule_id` is selected (an empty select selects all) and not ignored."""
    return (not select or _matches(rule_id, select)) and not _matches(rule_id, ignore)


def select_findings(findings: Iterable[Finding], select: Sequence[str] = (),
                    ignore: Sequence[str] = ()) -> list[Finding]:
    """The findings whose rule is enabled by `select` and `ignore` (ids or prefixes)."""
    return [f for f in findings if rule_enabled(f.rule, select, ignore)]


def _comment(line: str) -> str | None:
    """The comment part of one line of Python, skipping '#' inside string literals on that line."""
    quote: str | None = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote is not None:
            if c == "\\":
                i += 1
            elif line.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif c == "#":
            return line[i:]
        elif c in "'\"":
            quote = line[i:i + 3] if line.startswith(c * 3, i) else c
            i += len(quote) - 1
        i += 1
    return None


def parse_suppression(line: str) -> tuple[str, ...] | None:
    """The rule patterns a `# cgtool: ignore[...]` comment on `line` names; () for a bare
    `# cgtool: ignore` (every rule); None when the line has no such comment."""
    comment = _comment(line)
    if comment is None:
        return None
    m = _DIRECTIVE.search(comment)
    if m is None:
        return None
    if m.group("ids") is None:
        return ()
    ids = tuple(p.strip().upper() for p in m.group("ids").split(",") if p.strip())
    return ids or None  # "ignore[]" names nothing, so it suppresses nothing


def is_suppressed(finding: Finding, source_lines: Sequence[str] | None = None) -> bool:
    """True when the finding's line carries `# cgtool: ignore` or `# cgtool: ignore[<its rule>,...]`.

    `source_lines` are the lines of the finding's file (line 1 first); without them, or when the line
    is out of range, the finding's own `source` text is checked.
    """
    line: str | None = None
    if source_lines is not None and finding.line is not None and 1 <= finding.line <= len(source_lines):
        line = source_lines[finding.line - 1]
    elif finding.source is not None:
        line = finding.source
    if line is None:
        return False
    patterns = parse_suppression(line)
    if patterns is None:
        return False
    return patterns == () or _matches(finding.rule, patterns)


def read_source_lines(path: str) -> list[str]:
    """The lines of a source file, or [] when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return []


def remove_suppressed(findings: Iterable[Finding],
                      read_lines: Callable[[str], Sequence[str]] = read_source_lines) -> list[Finding]:
    """The findings not suppressed by a comment on their line; each file is read once."""
    cache: dict[str, Sequence[str]] = {}
    kept = []
    for f in findings:
        lines: Sequence[str] | None = None
        if f.file is not None:
            if f.file not in cache:
                cache[f.file] = read_lines(f.file)
            lines = cache[f.file]
        if not is_suppressed(f, lines or None):
            kept.append(f)
    return kept


def filter_findings(findings: Iterable[Finding], select: Sequence[str] = (), ignore: Sequence[str] = (),
                    read_lines: Callable[[str], Sequence[str]] = read_source_lines) -> list[Finding]:
    """select_findings, then remove_suppressed: what lint reports."""
    return remove_suppressed(select_findings(findings, select, ignore), read_lines)
