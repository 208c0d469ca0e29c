"""The HTML report's files: the text of the scripts a report names (read for the page's source listing, never
run) and writing the page (atomically, render/files.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from cgtool.model.lint_result import LintResult
from cgtool.model.ranks import DistReport
from cgtool.model.report import Report
from cgtool.render.files import write_output

MAX_FILES = 20
MAX_BYTES = 2 * 2**20


def read_sources(paths: Iterable[str | None]) -> dict[str, str]:
    """path -> text for each named file that exists and reads as UTF-8 text (a few, none too large); the
    others are left out and the page shows the lines the report recorded."""
    out: dict[str, str] = {}
    for p in dict.fromkeys(p for p in paths if p):
        if len(out) >= MAX_FILES:
            break
        try:
            if not os.path.isfile(p) or os.path.getsize(p) > MAX_BYTES:
                continue
            with open(p, encoding="utf-8") as fh:
                out[p] = fh.read()
        except (OSError, UnicodeDecodeError):
            continue
    return out


def report_paths(report: Report) -> list[str]:
    """The files a capture report names: the script, its findings' and errors' files, the lines of graph nodes."""
    paths = [report.script, *(f.file for f in report.findings if f.file)]
    paths += [fr.file for e in report.errors for fr in e.frames]
    if report.node_lines is not None:
        frames = report.node_lines.frames
        paths += [frames[n.frame].file for n in report.node_lines.nodes if 0 <= n.frame < len(frames)]
    return paths


def lint_paths(result: LintResult) -> list[str]:
    """The scripts with findings, and the files their findings name."""
    return [p for s in result.scripts if s.findings for p in (s.path, *(f.file for f in s.findings if f.file))]


def dist_paths(report: DistReport) -> list[str]:
    return [report.script] + [p for r in report.ranks if r.report is not None for p in report_paths(r.report)]


def write_html(path: str, page: str) -> str:
    """Write the page (a CgtoolError, exit 3, when it cannot be written)."""
    return write_output(path, page)
