"""`cgtool report`: a saved report (capture's report.json, `lint --format json`, bench JSON, a distributed run's
merged report.json) as one self-contained HTML page. Reads files only: no script runs, no torch."""

from __future__ import annotations

import os

import click


@click.command(name="report", short_help="A saved report (capture, lint, bench, ranks) as one HTML page.")
@click.argument("report_file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out_path", type=click.Path(dir_okay=False), default=None,
              help="The page to write [default: REPORT_FILE with .html].")
def report(report_file: str, out_path: str | None) -> None:
    """Write REPORT_FILE as one HTML page that opens from disk with nothing fetched.

    \b
    REPORT_FILE is any JSON cgtool writes:
      report.json              capture's report (findings, graph, line profile, memory, torch.compile)
      lint --format json       many scripts' findings
      bench --out FILE.json    eager versus replay per size, and the capture-size plan
      merged report.json       a --nproc-per-node run: one tab per rank, the cross-rank findings

    \b
    The graph is drawn with Graphviz's `dot` program where it is installed (else the page says so and
    lists the nodes). The scripts the report names are read, where they still exist, for the source
    listing that findings and graph nodes link to. docs/html.md describes the page.

    \b
    Exit codes: 0 written; 2 the file is missing or not a cgtool report; 3 the page cannot be written.
    """
    from cgtool.errors import CgtoolError, ExitCode
    from cgtool.render.console import console
    from cgtool.render.files import check_writable, refuse_input

    out_path = out_path or os.path.splitext(report_file)[0] + ".html"
    if os.path.abspath(out_path) == os.path.abspath(report_file):
        raise CgtoolError(f"-o {out_path} is the report itself: give another path.", ExitCode.USAGE)
    check_writable(out_path, "-o")
    refuse_input(out_path, "-o", {report_file: "the report"})
    doc = _read(report_file)
    page = _page(doc, report_file)
    from cgtool.render.html_files import write_html

    write_html(out_path, page)
    console().print(f"wrote {out_path}", markup=False, highlight=False)


def _read(path: str) -> dict:
    """The report through the one reader (files/inputs.py): regular files only, bounded size and nesting."""
    from cgtool.errors import CgtoolError, ExitCode
    from cgtool.files.inputs import GRAPH, read_json

    if not os.path.lexists(path):
        raise CgtoolError(f"No such file: {path}", ExitCode.USAGE)
    doc = read_json(path, GRAPH)
    if not isinstance(doc, dict):
        raise CgtoolError(f"{path}: not a cgtool report (a JSON {type(doc).__name__}, not an object)", ExitCode.USAGE)
    return doc


def _page(doc: dict, path: str) -> str:
    from cgtool.errors import CgtoolError, ExitCode
    from cgtool.render.html import document_kind, render_document_html
    from cgtool.render.html_files import read_sources

    kind = document_kind(doc)
    if kind is None:
        raise CgtoolError(f"{path} is not a cgtool report: expected capture's report.json, `lint --format json` "
                          "output, a bench JSON or a distributed run's report.json", ExitCode.USAGE)
    named = _named_files(doc)
    try:
        return render_document_html(doc, read_sources(named))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        what = f'the field "{exc.args[0]}" is missing' if isinstance(exc, KeyError) and exc.args else str(exc) or type(exc).__name__
        raise CgtoolError(f"{path} is not a usable cgtool {kind} report: {what}", ExitCode.USAGE) from None


def _named_files(doc: dict) -> list[str]:
    """The files the document names, for the source listing (a document that does not read is left to _page)."""
    from cgtool.render.html_files import dist_paths, lint_paths, report_paths

    try:
        from cgtool.render.html import DISTRIBUTED, LINT, document_kind

        kind = document_kind(doc)
        if kind == LINT:
            from cgtool.model.lint_result import LintResult

            return lint_paths(LintResult.from_json(doc))
        if kind == DISTRIBUTED:
            from cgtool.model.ranks import DistReport

            return dist_paths(DistReport.from_json(doc))
        if "script" in doc and "status" in doc:
            from cgtool.model.report import Report

            return report_paths(Report.from_json(doc))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return []
    return []
