"""Which findings lint reports: --select/--ignore rule ids or prefixes, and `# cgtool: ignore[...]` comments.

A pattern is a rule id ("CG201") or a prefix of one ("CG2", "CG"): it matches every rule id that starts
with it, case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.finding import SOURCE, Finding
from cgtool.model.rules import RULES

# A comment that starts a suppression: `cgtool:` then `ignore` (any case). Only the two exact forms below
# suppress; anything else after it (a missing `]`, an empty list, `ignore CG101`, text glued to `]`) is malformed,
# suppresses nothing and is itself a CG001 finding (malformed_suppressions), like ruff's RUF100.
_START = re.compile(r"cgtool\s*:\s*ignore", re.IGNORECASE)
_DIRECTIVE = re.compile(r"cgtool\s*:\s*ignore(?:\[(?P<ids>\s*[A-Za-z0-9]+\s*(?:,\s*[A-Za-z0-9]+\s*)*,?\s*)\]"
                        r"(?:\s.*)?|\s*(?:#.*)?)$", re.IGNORECASE)  # a reason may follow `]` after a space


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
    `# cgtool: ignore` (every rule); None when the line has no such comment or a malformed one."""
    comment = _comment(line)
    if comment is None:
        return None
    start = _START.search(comment)
    if start is None:
        return None
    m = _DIRECTIVE.match(comment, start.start())
    if m is None:
        return None  # malformed: suppresses nothing (and is a CG001 finding)
    if m.group("ids") is None:
        return ()
    return tuple(p.strip().upper() for p in m.group("ids").split(",") if p.strip())


def suppression_problem(line: str) -> str | None:
    """Why the `# cgtool: ignore` comment on `line` is malformed or names an unknown rule; None when it is
    well formed or the line has none."""
    comment = _comment(line)
    start = None if comment is None else _START.search(comment)
    if comment is None or start is None:
        return None
    text = comment[start.start():].strip()
    if parse_suppression(line) is None:
        return (f"malformed suppression comment `{text[:80]}`: it suppresses nothing; write "
                "`# cgtool: ignore[CG101]`, `# cgtool: ignore[CG101,CG302]` or `# cgtool: ignore`")
    unknown = [p for p in parse_suppression(line) or () if not any(r.id.startswith(p) for r in RULES)]
    if unknown:
        return (f"suppression comment names unknown rule id {', '.join(unknown)}: it suppresses nothing for "
                f"{'it' if len(unknown) == 1 else 'them'} (see docs/rules.md)")
    return None


def suppression_findings(path: str, lines: Sequence[str]) -> list[Finding]:
    """A CG001 finding for each malformed `# cgtool: ignore` comment, or one naming an unknown rule, in a file."""
    from cgtool.model.rules import finding

    out = []
    for number, line in enumerate(lines, start=1):
        problem = suppression_problem(line)
        if problem is not None:
            out.append(finding("CG001", problem, file=path, line=number, source=line.strip(), origin=SOURCE))
    return out


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
    if finding.rule == "CG001":
        return False  # a broken suppression cannot hide itself
    return patterns == () or _matches(finding.rule, patterns)


def read_source_lines(path: str) -> list[str]:
    """The lines of a source file, or [] when it cannot be read (or is no regular file: the one reader)."""
    from cgtool.errors import CgtoolError
    from cgtool.files.inputs import SCRIPT, read_input

    try:
        return read_input(path, SCRIPT).decode("utf-8", errors="replace").splitlines()
    except CgtoolError:
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
                    read_lines: Callable[[str], Sequence[str]] = read_source_lines,
                    files: Sequence[str] = ()) -> list[Finding]:
    """What lint reports: the findings, plus CG001 for the bad suppression comments in `files` and in the
    files the findings point at, selected by `select`/`ignore`, then without those a comment suppresses."""
    findings = list(findings)
    paths = dict.fromkeys([*files, *(f.file for f in findings if f.file is not None)])
    for path in paths:
        findings += [f for f in suppression_findings(path, read_lines(path))
                     if (f.file, f.line, f.rule) not in {(g.file, g.line, g.rule) for g in findings}]
    return remove_suppressed(select_findings(findings, select, ignore), read_lines)
