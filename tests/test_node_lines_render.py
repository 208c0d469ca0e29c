"""Where node_lines shows: the capture table, graph.dot labels and colours, `cgtool dot report.json`, the JSON."""

from __future__ import annotations

import io
import json
import os

from rich.console import Console

from cgtool.graph.node_align import replay_times
from cgtool.model.node_profile import node_profile
from cgtool.model.report import CAPTURED, Report
from cgtool.render.capture import render_report
from cgtool.render.dot import HEAT, graph_to_dot
from test_node_profile import FRAMES, GRAPH, OPS

ROWS = [(1, "aten.addmm.default", 0, 2, "model.fc"), (2, "aten.zero_.default", 2, 3, "model.fc"),
        (3, "aten.relu.default", 3, 4, "")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {"PYTHONPATH": ROOT}  # this checkout's cgtool in the subprocess, whatever the cwd
REPLAY = [("gemm", "kernel", 30.0), ("bias", "kernel", 5.0), ("Memset (Device)", "gpu_memset", 1.0),
          ("relu", "kernel", 4.0), ("stray", "kernel", 2.0)]


def report() -> Report:
    profile = node_profile(GRAPH, FRAMES, OPS, ROWS, replay_times(GRAPH, [REPLAY] * 3))
    return Report(script="step.py", entry="step", status=CAPTURED, device="cuda", graph=GRAPH, node_lines=profile)


def test_report_json_keeps_node_lines() -> None:
    r = report()
    back = Report.from_json(json.loads(json.dumps(r.to_json())))
    assert back.node_lines is not None and back.node_lines.to_json() == r.node_lines.to_json()
    assert r.to_json()["node_lines"]["kernels_mapped"] == 3


def test_capture_shows_the_top_lines() -> None:
    buf = io.StringIO()
    render_report(report(), Console(file=buf, width=200, no_color=True))
    out = buf.getvalue()
    assert "replay GPU time by line" in out
    assert "lib/mlp.py:5" in out and "return self.fc(x)" in out and "86%" in out
    assert "3 of 4 kernel nodes mapped to a line" in out
    assert "launch-bound" not in out  # no eager step profiled


def test_capture_shows_the_launch_bound_lines_and_json_keeps_them() -> None:
    from cgtool.model.node_profile import EagerLine

    r = report()
    r.node_lines.eager = [EagerLine(r.node_lines.nodes[0].lib, 48.0, 30.0, 29.5)]
    buf = io.StringIO()
    render_report(r, Console(file=buf, width=200, no_color=True))
    out = buf.getvalue()
    assert "launch-bound lines: eager CPU over eager GPU time" in out
    assert "│ lib/mlp.py:5 │ return self.fc(x) │     48 µs │     30 µs │      30 µs │" in out
    back = Report.from_json(json.loads(json.dumps(r.to_json())))
    assert back.node_lines.eager == r.node_lines.eager


def test_graph_dot_names_each_nodes_line_and_colours_by_time() -> None:
    r = report()
    source = graph_to_dot(r.graph, lines=r.node_lines).source
    assert "lib/mlp.py:5 · 30.0 µs" in source or "lib/mlp.py:5 · 30 µs" in source
    assert HEAT[-1] in source  # the slowest node is the darkest
    plain = graph_to_dot(r.graph).source
    assert "lib/mlp.py" not in plain


def test_dot_summarises_a_report_by_line_and_module(run_cli, tmp_path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report().to_json()))
    r = run_cli("dot", path, env=ENV)
    assert r.returncode == 0, r.stderr
    assert "replay GPU time by line" in r.stdout and "replay GPU time by module" in r.stdout
    assert "model.fc" in r.stdout
    j = run_cli("dot", path, "--json", env=ENV)
    data = json.loads(j.stdout)
    assert [row["key"] for row in data["node_lines"]["module"]] == ["model.fc", ""]
    assert data["node_lines"]["line"][0]["key"] == "step.py:10"
