"""Write a capture's output folder, each file atomically (render/files.py): report.json, graph.dot,
graph.driver.dot, graph.svg, timeline.json (the profiled replays and eager step as a Chrome trace),
graph-piece-N.dot per piece of a pieced step (--piecewise), modules-plan.py (the module map's recommended set as
code to paste, --modules), and torch.compile's graphs (graph.dot, graph-2.dot, ... in the driver's DOT) for a
compiled step."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.report import Report
from cgtool.render.files import write_output


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


def write_outputs(report: Report, out_dir: str, render_svg: bool = True) -> None:
    """Write every output the report supports; record paths in report.outputs; report.json last.

    A file that cannot be written (a full disk, a folder made read-only or removed mid-run) leaves no
    half-written file: a picture that fails is noted in report.skipped, and report.json failing is a
    CgtoolError (exit 3) raised after report.outputs lists only what was written."""
    import time

    t0 = time.perf_counter()
    written: dict[str, str] = {}
    driver_src = report.outputs.pop("graph.driver.dot", None)
    if driver_src and os.path.exists(driver_src):
        try:
            with open(driver_src, "rb") as fh:
                driver = fh.read()
            written["graph.driver.dot"] = write_output(os.path.join(out_dir, "graph.driver.dot"), driver)
        except OSError as exc:
            report.skipped.append(f"graph.driver.dot: cannot read the driver's dump: {exc.strerror or exc}")
        except CgtoolError as exc:
            report.skipped.append(f"graph.driver.dot: {exc.message}")
    for name in [k for k in report.outputs if k.startswith("graph") and k.endswith(".dot") and k != "graph.driver.dot"]:
        src = report.outputs.pop(name)  # torch.compile's graphs (graph.dot, graph-2.dot, ...): the driver's DOT
        if os.path.exists(src) and report.graph is None:
            try:
                with open(src, "rb") as fh:
                    written[name] = write_output(os.path.join(out_dir, name), fh.read())
            except OSError as exc:
                report.skipped.append(f"{name}: cannot read it: {exc.strerror or exc}")
            except CgtoolError as exc:
                report.skipped.append(f"{name}: {exc.message}")
    if report.graph is not None:
        try:
            _write_graph_pictures(report, out_dir, written, render_svg, t0)
        except CgtoolError as exc:  # e.g. the graphviz package missing: the report must still be written
            report.skipped.append(f"graph.dot: {exc.message}")
    _write_timeline(report, out_dir, written)
    if report.piecewise is not None:
        _write_piece_dots(report, out_dir, written)
    if report.modules is not None:
        _write_plan(report, out_dir, written)
    report_path = os.path.join(out_dir, "report.json")
    report.outputs = {**written, "report.json": report_path}
    try:
        write_output(report_path, json.dumps(report.to_json(), indent=1) + "\n")
    except CgtoolError:
        report.outputs = written
        raise


def _write_graph_pictures(report: Report, out_dir: str, written: dict[str, str], render_svg: bool, t0: float) -> None:
    import time

    from cgtool.render.dot import graph_to_dot
    from cgtool.render.dot_file import render_source

    # every node stays in graph.dot (folded where it repeats) so `cgtool dot graph.dot` reads it back whole
    source = graph_to_dot(report.graph, max_nodes=max(len(report.graph.nodes), 1), lines=report.node_lines).source
    dot_path = os.path.join(out_dir, "graph.dot")
    write_output(dot_path, source)
    written["graph.dot"] = dot_path
    report.settings["write_dots_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
    if render_svg and shutil.which("dot"):
        svg_path = os.path.join(out_dir, "graph.svg")
        try:
            write_output(svg_path, render_source(source, "svg"))
            written["graph.svg"] = svg_path
        except CgtoolError as exc:
            report.skipped.append(f"graph.svg: {exc.message}")


def _write_timeline(report: Report, out_dir: str, written: dict[str, str]) -> None:
    """timeline.json: the profiled replays and eager step as a Chrome trace (Perfetto, chrome://tracing)."""
    from cgtool.render.timeline import has_timeline, render_timeline

    if not has_timeline(report):
        return
    try:
        written["timeline.json"] = write_output(os.path.join(out_dir, "timeline.json"), render_timeline(report))
    except CgtoolError as exc:
        report.skipped.append(f"timeline.json: {exc.message}")


def _write_plan(report: Report, out_dir: str, written: dict[str, str]) -> None:
    """modules-plan.py: the module map's recommended set as code to paste (--modules, on a GPU)."""
    from cgtool.render.plan import plan_code

    code = plan_code(report.modules, os.path.basename(report.script))
    if code:
        try:
            written["modules-plan.py"] = write_output(os.path.join(out_dir, "modules-plan.py"), code)
        except CgtoolError as exc:
            report.skipped.append(f"modules-plan.py: {exc.message}")


def _write_piece_dots(report: Report, out_dir: str, written: dict[str, str]) -> None:
    """graph-piece-N.dot for each piece whose CUDA graph was read (--piecewise)."""
    from cgtool.render.dot import graph_to_dot

    for piece in report.piecewise.pieces:
        if piece.graph is None:
            continue
        name = f"graph-piece-{piece.index}.dot"
        try:
            source = graph_to_dot(piece.graph, max_nodes=max(len(piece.graph.nodes), 1)).source
        except CgtoolError as exc:  # the graphviz package missing
            report.skipped.append(f"{name}: {exc.message}")
            return
        try:
            written[name] = write_output(os.path.join(out_dir, name), source)
        except CgtoolError as exc:
            report.skipped.append(f"{name}: {exc.message}")
