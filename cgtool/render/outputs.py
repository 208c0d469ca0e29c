"""Write a capture's output folder, each file atomically (render/files.py): report.json, report.html,
graph.dot, graph.driver.dot, graph.svg, timeline.json (the profiled replays and eager step as a Chrome trace),
graph-piece-N.dot per piece of a pieced step (--piecewise), modules-plan.py (the module map's recommended set as
code to paste, --modules), and torch.compile's graphs (graph.dot, graph-2.dot, ... in the driver's DOT) for a
compiled step.

The names are cgtool's: a symlink there is replaced, never written through (write_output's follow_links=False).
A run that did not complete (run_complete: failed, timed out, interrupted) writes each file that already exists
under its failed name beside it (report.failed.json), so an existing report.json is only replaced by a complete
run; write_outputs returns {name: failed name} for the caller to say so."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Callable

from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.report import Report
from cgtool.model.report_parts import OUTPUT_FILE, Skip
from cgtool.render.files import failed_path, write_output
from cgtool.render.json_text import json_text

if TYPE_CHECKING:
    from cgtool.model.ranks import DistReport

Put = Callable[[str, "str | bytes"], str]  # write one of cgtool's files in the output folder, return its path


def prepare_out_dir(path: str) -> str:
    """Create the output folder (or fail with a clear message) before any work starts."""
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".cgtool-probe-", delete=True)
        probe.close()
    except OSError as exc:
        raise CgtoolError(f"Cannot write to the output folder {path}: {exc.strerror or exc}. "
                          "Pick another with --out DIR.", ExitCode.ENVIRONMENT) from None
    return path


def run_complete(report: Report, failure: str | None) -> bool:
    """Whether a capture run got to the end: the worker neither crashed, timed out nor was interrupted, and the
    script ran (a failed capture is a complete answer; a script or worker failure is not)."""
    from cgtool.model.report import SCRIPT_ERROR, WORKER_FAILED

    return failure is None and report.status not in (SCRIPT_ERROR, WORKER_FAILED)


def dist_complete(report: DistReport, failure: str | None) -> bool:
    """Whether a run on ranks got to the end: the launcher neither failed, timed out nor was interrupted, and every
    rank's run was complete (`run_complete`): a world where a rank's script raised, or a rank wrote no report,
    keeps the files of an earlier run (its own go beside them, as report.failed.json)."""
    return failure is None and bool(report.ranks) and all(
        r.report is not None and run_complete(r.report, None) for r in report.ranks)


def own_path(out_dir: str, name: str, complete: bool) -> str:
    """Where `write_own` writes cgtool's file `name`: in `out_dir`, or beside an existing file under its failed
    name (report.failed.json) when the run did not complete."""
    path = os.path.join(out_dir, name)
    return failed_path(path) if not complete and os.path.lexists(path) and not os.path.isdir(path) else path


def write_own(out_dir: str, name: str, data: str | bytes, complete: bool = True,
              kept: dict[str, str] | None = None) -> str:
    """Write cgtool's file `name` in `out_dir` (a folder inside it made as needed); an incomplete run writes an
    existing file's failed name instead and records it in `kept`. Returns the path written."""
    path = own_path(out_dir, name, complete)
    if path != os.path.join(out_dir, name) and kept is not None:
        kept[name] = path
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    except OSError as exc:  # the folder removed and a file put in its place, or made read-only, mid-run
        raise CgtoolError(f"Cannot write {path}: {exc.strerror or exc}", ExitCode.ENVIRONMENT) from None
    return write_output(path, data, follow_links=False)


def say_kept(out_dir: str, kept: dict[str, str]) -> None:
    """One line on stderr per file an incomplete run left as it was, and where its own version went."""
    if not kept:
        return
    from cgtool.render.console import console
    from cgtool.render.files import KEPT_NOTE

    for name, other in kept.items():
        console(stderr=True).print(KEPT_NOTE.format(path=os.path.join(out_dir, name), other=other), soft_wrap=True,
                                   markup=False)


def write_outputs(report: Report, out_dir: str, render_svg: bool = True, complete: bool = True,
                  html: bool = True) -> dict[str, str]:
    """Write every output the report supports; record paths in report.outputs; report.json last. Returns the
    files kept because the run did not complete: {name: where this run's version went}.

    A file that cannot be written (a full disk, a folder made read-only or removed mid-run) leaves no
    half-written file: a picture (or report.html) that fails is noted in report.skipped, and report.json failing is a
    CgtoolError (exit 3) raised after report.outputs lists only what was written."""
    import time

    t0 = time.perf_counter()
    written: dict[str, str] = {}
    kept: dict[str, str] = {}

    def put(name: str, data: str | bytes) -> str:
        return write_own(out_dir, name, data, complete, kept)

    driver_src = report.outputs.pop("graph.driver.dot", None)
    if driver_src and os.path.exists(driver_src):
        try:
            with open(driver_src, "rb") as fh:
                driver = fh.read()
            written["graph.driver.dot"] = put("graph.driver.dot", driver)
        except OSError as exc:
            report.skipped.append(Skip(OUTPUT_FILE, (
                    f"graph.driver.dot: cannot read the driver's dump: {exc.strerror or exc}")))
        except CgtoolError as exc:
            report.skipped.append(Skip(OUTPUT_FILE, f"graph.driver.dot: {exc.message}"))
    for name in [k for k in report.outputs if k.startswith("graph") and k.endswith(".dot") and k != "graph.driver.dot"]:
        src = report.outputs.pop(name)  # torch.compile's graphs (graph.dot, graph-2.dot, ...): the driver's DOT
        if os.path.exists(src) and report.graph is None:
            try:
                with open(src, "rb") as fh:
                    written[name] = put(name, fh.read())
            except OSError as exc:
                report.skipped.append(Skip(OUTPUT_FILE, f"{name}: cannot read it: {exc.strerror or exc}"))
            except CgtoolError as exc:
                report.skipped.append(Skip(OUTPUT_FILE, f"{name}: {exc.message}"))
    if report.graph is not None:
        try:
            _write_graph_pictures(report, put, written, render_svg, t0)
        except CgtoolError as exc:  # e.g. the graphviz package missing: the report must still be written
            report.skipped.append(Skip(OUTPUT_FILE, f"graph.dot: {exc.message}"))
    _write_timeline(report, put, written)
    if report.piecewise is not None:
        _write_piece_dots(report, put, written)
    if report.modules is not None:
        _write_plan(report, put, written)
    report_path = own_path(out_dir, "report.json", complete)
    if report_path != os.path.join(out_dir, "report.json"):
        kept["report.json"] = report_path
    if html:
        _write_html(report, put, written, report_path)
    report.outputs = {**written, "report.json": report_path}
    try:
        write_output(report_path, report_text(report, written), follow_links=False)
    except CgtoolError:
        report.outputs = written
        raise
    return kept


def _write_graph_pictures(report: Report, put: Put, written: dict[str, str], render_svg: bool, t0: float) -> None:
    import time

    from cgtool.render.dot import graph_to_dot
    from cgtool.render.dot_file import render_source

    # every node stays in graph.dot (folded where it repeats) so `cgtool dot graph.dot` reads it back whole
    graph = report.graph
    assert graph is not None  # write_outputs calls this only for a report with a graph
    source = graph_to_dot(graph, max_nodes=max(len(graph.nodes), 1), lines=report.node_lines).source
    written["graph.dot"] = put("graph.dot", source)
    report.phase_ms["write_dots"] = round((time.perf_counter() - t0) * 1e3, 2)
    if render_svg and shutil.which("dot"):
        try:
            written["graph.svg"] = put("graph.svg", render_source(source, "svg"))
        except CgtoolError as exc:
            report.skipped.append(Skip(OUTPUT_FILE, f"graph.svg: {exc.message}"))


def _write_timeline(report: Report, put: Put, written: dict[str, str]) -> None:
    """timeline.json: the profiled replays and eager step as a Chrome trace (Perfetto, chrome://tracing)."""
    from cgtool.render.timeline import has_timeline, render_timeline

    if not has_timeline(report):
        return
    try:
        written["timeline.json"] = put("timeline.json", render_timeline(report))
    except CgtoolError as exc:
        report.skipped.append(Skip(OUTPUT_FILE, f"timeline.json: {exc.message}"))


def report_text(report: Report, written: dict[str, str]) -> str:
    """report.json's text (render/json_text.py: a long list one element per line); `written`: the files written
    beside it. Sets report.phase_ms["write_json"]: the time to make the report's JSON and its text, written last in
    the file it times (the disk write after it is not in it)."""
    import time

    t0 = time.perf_counter()
    doc = _without_timeline_events(report.to_json(), written)

    def phases() -> dict[str, float]:
        report.phase_ms["write_json"] = round((time.perf_counter() - t0) * 1e3, 2)
        return dict(report.phase_ms)

    return json_text(doc, late={"phase_ms": phases})


def _without_timeline_events(doc: dict[str, Any], written: dict[str, str]) -> dict[str, Any]:
    """report.json names timeline.json instead of holding its events again: a 3,000-node graph's profiled replays
    are 15,000 events, which would double the time to read and write the report (the bar: under a second)."""
    lines = doc.get("node_lines")
    if "timeline.json" in written and isinstance(lines, dict) and isinstance(lines.get("timeline"), dict):
        # the file this run wrote: timeline.failed.json beside a kept timeline.json after an incomplete run
        lines["timeline"] = {"file": os.path.basename(written["timeline.json"]),
                             "events": len(lines["timeline"].get("events", ()))}
    return doc


def _write_html(report: Report, put: Put, written: dict[str, str], report_path: str) -> None:
    """report.html: the report as one self-contained page (docs/html.md), listing the files beside it."""
    from cgtool.render.html import render_report_html
    from cgtool.render.html_files import read_sources, report_paths

    report.outputs = {**written, "report.html": os.path.join(os.path.dirname(report_path), "report.html"),
                      "report.json": report_path}
    try:
        written["report.html"] = put("report.html", render_report_html(report, read_sources(report_paths(report))))
    except CgtoolError as exc:
        report.skipped.append(Skip(OUTPUT_FILE, f"report.html: {exc.message}"))
    except Exception as exc:  # noqa: BLE001 - a page the renderer cannot draw must never cost report.json
        report.skipped.append(Skip(OUTPUT_FILE, f"report.html: the page could not be drawn ({type(exc).__name__}: "
                                                f"{exc}); report.json is complete"))


def _write_plan(report: Report, put: Put, written: dict[str, str]) -> None:
    """modules-plan.py: the module map's recommended set as code to paste (--modules, on a GPU)."""
    from cgtool.render.plan import plan_code

    if report.modules is None:
        return
    code = plan_code(report.modules, os.path.basename(report.script))
    if code:
        try:
            written["modules-plan.py"] = put("modules-plan.py", code)
        except CgtoolError as exc:
            report.skipped.append(Skip(OUTPUT_FILE, f"modules-plan.py: {exc.message}"))


def _write_piece_dots(report: Report, put: Put, written: dict[str, str]) -> None:
    """graph-piece-N.dot for each piece whose CUDA graph was read (--piecewise)."""
    from cgtool.render.dot import graph_to_dot

    for piece in report.piecewise.pieces if report.piecewise is not None else ():
        if piece.graph is None:
            continue
        name = f"graph-piece-{piece.index}.dot"
        try:
            source = graph_to_dot(piece.graph, max_nodes=max(len(piece.graph.nodes), 1)).source
        except CgtoolError as exc:  # the graphviz package missing
            report.skipped.append(Skip(OUTPUT_FILE, f"{name}: {exc.message}"))
            return
        try:
            written[name] = put(name, source)
        except CgtoolError as exc:
            report.skipped.append(Skip(OUTPUT_FILE, f"{name}: {exc.message}"))
