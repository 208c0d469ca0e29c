"""The HTML report: one self-contained page (styles and script inlined, nothing fetched) for a capture report,
a lint run, a bench report or a distributed run. The sections live in render/html_*.py; this module names the
entry points and picks one for a JSON document read back from disk (docs/html.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cgtool.render.html_bench import render_bench_html
from cgtool.render.html_capture import render_report_html
from cgtool.render.html_distributed import render_distributed_html
from cgtool.render.html_lint import render_lint_html

__all__ = [
    "document_kind",
    "render_bench_html",
    "render_distributed_html",
    "render_document_html",
    "render_lint_html",
    "render_report_html",
]

CAPTURE, LINT, BENCH, DISTRIBUTED = "capture", "lint", "bench", "distributed"


def document_kind(doc: Any) -> str | None:
    """Which of cgtool's JSON documents `doc` is, by its own fields; None when it is none of them."""
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == "cgtool-bench":
        return BENCH
    if doc.get("kind") == "distributed":
        return DISTRIBUTED
    if isinstance(doc.get("scripts"), list) and isinstance(doc.get("summary"), dict):
        return LINT
    if "script" in doc and "status" in doc and "entry" in doc:
        return CAPTURE
    return None


def render_document_html(doc: dict[str, Any], sources: Mapping[str, str] | None = None) -> str:
    """The page for a JSON document cgtool wrote (report.json, `lint --format json`, bench JSON, the merged
    distributed report). Raises ValueError (or KeyError/TypeError from a reader) for anything else."""
    kind = document_kind(doc)
    if kind == BENCH:
        from cgtool.bench.result import BenchReport

        return render_bench_html(BenchReport.from_json(doc), doc.get("plan"))
    if kind == DISTRIBUTED:
        from cgtool.model.ranks import DistReport

        return render_distributed_html(DistReport.from_json(doc), sources)
    if kind == LINT:
        from cgtool.model.lint_result import LintResult

        return render_lint_html(LintResult.from_json(doc), sources)
    if kind == CAPTURE:
        from cgtool.model.report import Report

        return render_report_html(Report.from_json(doc), sources)
    raise ValueError("not a cgtool report: expected report.json, `lint --format json` output, a bench JSON or a "
                     "distributed report")
