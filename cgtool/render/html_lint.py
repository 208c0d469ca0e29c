"""A lint run over many scripts as HTML: the counts, one row per script, each script's findings (its lines and
fixes), the scripts that could not be analysed and the rules that could not run."""

from __future__ import annotations

from collections.abc import Mapping

from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import CROSS_RANK_RULES, WORLD_OF_ONE
from cgtool.render.html_findings import findings_html, not_checked_html, severity_counts
from cgtool.render.html_page import (
    cards,
    esc,
    page,
    section,
    table,
    top_header,
    verdict,
)
from cgtool.render.html_source import SourceLines


def _verdict(result: LintResult) -> tuple[str, str]:
    n = len(result.scripts)
    if result.interrupted:
        return f"interrupted: {n} script(s) analysed, {len(result.unchecked)} not", "bad"
    if result.error_count or result.failed_scripts:
        failed = f", {len(result.failed_scripts)} could not be analysed" if result.failed_scripts else ""
        return f"{result.error_count} error(s) in {n} script(s){failed}: the gate fails", "bad"
    return f"{n} script(s) pass: no error-severity finding ({result.warning_count} warning(s))", "ok"


def _status(s: ScriptResult) -> str:
    if s.failed:
        return '<span class="sev error">not analysed</span>'
    if s.count("error"):
        return '<span class="sev error">fails</span>'
    return '<span class="sev info" style="background:#2b8a3e">passes</span>'


def script_html(s: ScriptResult, k: int, sources: Mapping[str, str], common: frozenset[str] = frozenset()) -> str:
    """One script's section; `common`: the rules no script could check, said once for the run instead."""
    named = {s.path, *(f.file for f in s.findings if f.file)}
    src = SourceLines(prefix=f"s{k}-", full={p: t for p, t in sources.items() if p in named})
    for f in s.findings:
        src.mark(f.file, f.line, f.rule, f.severity)
        if f.source:
            src.add(f.file, f.line, f.source)
    parts = [findings_html(s.findings, src, "No finding.")]
    if s.errors:
        parts.append("".join(f'<div class="finding error"><span class="sev error">error</span> '
                             f'<div class="msg">{esc(e)}</div></div>' for e in s.errors))
    unchecked = [r for r in s.skipped_rules if r not in common]
    if unchecked:
        parts.append(not_checked_html([], unchecked, s.skipped_reason))
    if s.ranks_unchecked and not set(s.ranks_unchecked) <= common:
        parts.append(not_checked_html([], s.ranks_unchecked, f"a world of one rank: {WORLD_OF_ONE}"))
    if s.findings:  # the findings' lines link here (a link opens the closed <details>)
        parts.append(f"<details><summary>source</summary>{src.listing_html()}</details>")
    title = f"{s.path}:{s.entry}"
    return section(title, "".join(parts), f"s{k}", severity_counts(s.findings), open_=bool(s.findings or s.errors))


def render_lint_html(result: LintResult, sources: Mapping[str, str] | None = None) -> str:
    """The lint result (`lint --format json`) as one self-contained HTML page."""
    text, kind = _verdict(result)
    head = top_header(f"cgtool lint · {len(result.scripts)} script(s)",
                      f"analysed on {result.device}" + (f" · cgtool {result.version}" if result.version else ""))
    rows = [[f'<a href="#s{k}">{esc(s.path)}</a>', _status(s), str(s.count("error")), str(s.count("warning")),
             str(s.count("info")), esc(s.device)] for k, s in enumerate(result.scripts)]
    body = [verdict(text, kind),
            cards([(str(len(result.scripts)), "scripts"), (str(result.error_count), "errors"),
                   (str(result.warning_count), "warnings"), (str(result.info_count), "notes"),
                   (str(len(result.failed_scripts)), "not analysed")]),
            section("Scripts", table(["script", "status", "errors", "warnings", "notes", "device"], rows,
                                     numeric=(2, 3, 4)), "scripts")]
    analysed = [s for s in result.scripts if not s.failed]
    common = frozenset.intersection(*(frozenset(s.skipped_rules) | frozenset(s.ranks_unchecked) for s in analysed)) \
        if analysed else frozenset()
    body += [script_html(s, k, sources or {}, common) for k, s in enumerate(result.scripts)]
    skipped = [f"{p}: not analysed (the run was interrupted)" for p in result.unchecked]
    if result.skipped_rules or skipped:
        why = result.skipped_reason or ("cross-rank rules need several ranks" if
                                        set(result.skipped_rules) <= set(CROSS_RANK_RULES) else "")
        body.append(section("Not checked", not_checked_html(skipped, result.skipped_rules, why), "skipped"))
    return page("cgtool lint", head, "".join(body))
