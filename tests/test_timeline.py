"""timeline.json (cgtool/capture/timeline_events.py reads the profiler's traces, cgtool/render/timeline.py writes the
Chrome trace): on hand-made traces, and on the graphs, lines, modules and profiled events recorded on an H200
(tests/data/nodes) with every kernel named by its node, line and module."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from timeline_traces import STREAM, THREAD, eager_trace, replay_trace

from cgtool.capture.timeline_events import eager_slices, replay_slices, timeline
from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.node_align import replay_times
from cgtool.model.frame import Frame
from cgtool.model.node_profile import NodeProfile, node_profile
from cgtool.model.report import Report
from cgtool.model.timeline import EAGER, REPLAY, Slice, Timeline
from cgtool.model.trace import OpRecord
from cgtool.render.outputs import write_outputs
from cgtool.render.timeline import GPU_TID, has_timeline, render_timeline

NODES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "nodes")


def _kernel(i: int, name: str) -> GraphNode:
    return GraphNode(i, "kernel", name=name, mangled=name)


def test_replays_are_launches_and_their_kernels_each_tied_to_its_node():
    graph = Graph(nodes=[_kernel(0, "gemm"), _kernel(1, "relu"), GraphNode(2, "memset")], edges=[], source="cuda")
    trace = {"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 100, "dur": 4, "tid": 3,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 200, "dur": 4, "tid": 3,
         "args": {"correlation": 6}},
        {"ph": "X", "cat": "kernel", "name": "relu", "ts": 120, "dur": 2, "tid": 7, "args": {"correlation": 5, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 110, "dur": 9, "tid": 7, "args": {"correlation": 5, "stream": 7}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 125, "dur": 1, "tid": 9,
         "args": {"correlation": 5, "stream": 9}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 210, "dur": 8, "tid": 7, "args": {"correlation": 6, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "eager", "ts": 50, "dur": 1, "tid": 7, "args": {"correlation": 2}},
        {"ph": "X", "cat": "cuda_driver", "name": "cuGraphLaunch", "ts": 201, "dur": 2, "tid": 3,
         "args": {"correlation": 8}},  # the driver's call under the runtime's: no kernel carries its id
    ]}
    got = replay_slices(graph, trace)
    assert [(s.name, s.ts, s.lane, s.node, s.run) for s in got] == [
        ("cudaGraphLaunch", 0, 3, -1, 0), ("cudaGraphLaunch", 100, 3, -1, 1),
        ("gemm", 10, 7, 0, 0), ("relu", 20, 7, 1, 0), ("Memset (Device)", 25, 9, 2, 0),
        ("gemm", 110, 7, 0, 1)]  # the kernel launched one by one belongs to no replay


def test_eager_ops_are_the_outermost_and_named_by_their_first_kernels_node():
    graph = Graph(nodes=[_kernel(0, "gemm"), _kernel(1, "relu")], edges=[], source="cuda")
    trace = eager_trace([["gemm", "kernel", 3.0, 0], ["relu", "kernel", 1.0, 1], ["stray", "kernel", 1.0, 1]],
                        [20.0, 6.0])
    trace["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 2, "dur": 5, "tid": THREAD})
    got = eager_slices(graph, trace)
    ops = [(s.name, s.node) for s in got if s.cat == "cpu_op"]
    assert ops == [("aten::op0", 0), ("aten::op1", 1)]  # aten::addmm runs inside op0: not an outermost op
    assert [(s.name, s.node, s.lane) for s in got if s.on_gpu] == [("gemm", 0, STREAM), ("relu", 1, STREAM),
                                                                   ("stray", -1, STREAM)]
    assert min(s.ts for s in got) == 0


def test_the_timeline_round_trips_through_json():
    t = Timeline([Slice(REPLAY, "k" * 300, "kernel", 1.25, 2.5, 7, 3, 1), Slice(EAGER, "aten::mm", "cpu_op", 0, 4)])
    d = t.to_json()
    assert d["names"] == ["k" * 300, "aten::mm"]  # each name once
    assert Timeline.from_json(json.loads(json.dumps(d))) == t
    profile = NodeProfile(timeline=t)
    assert NodeProfile.from_json(profile.to_json()).timeline == t
    assert "timeline" not in NodeProfile().to_json()


def _recorded(name: str) -> tuple[Report, int]:
    """A capture's report rebuilt from a GPU recording: graph, node lines and modules (the recorder's node counts),
    replay times, and the timeline of its 5 replays and eager step."""
    with gzip.open(os.path.join(NODES, f"{name}.nodes.json.gz"), "rt") as fh:
        fx = json.load(fh)
    graph = Graph.from_json(fx["graph"])
    frames = [Frame.from_json(f) for f in fx["trace"]["frames"]]
    ops = [OpRecord.from_json(o) for o in fx["trace"]["ops"]]
    replays = [[tuple(e[:3]) for e in r] for r in fx["replays"]]
    profile = node_profile(graph, frames, ops, [tuple(r) for r in fx["capture_nodes"]], replay_times(graph, replays))
    profile.timeline = timeline(graph, replay_trace(fx["replays"]),
                                eager_trace(fx["eager"]["outer"]["kernels"], fx["eager"]["outer"]["cpu_us"]))
    report = Report(fx["script"], "step", status="captured", device="cuda", graph=graph, node_lines=profile,
                    cgtool_version="test")
    return report, len(fx["replays"])


@pytest.mark.parametrize("name, file, module", [
    ("mlp_inference", "mlp_inference.py", "model.0"),
    ("hf_llama_infer", "hf_llama_infer.py", "model.model.layers.0.self_attn"),
])
def test_every_replayed_kernel_is_named_by_its_node_line_and_module(name, file, module):
    report, runs = _recorded(name)
    trace = json.loads(render_timeline(report))
    events = trace["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    for e in slices:
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and isinstance(e["pid"], int)
        assert isinstance(e["tid"], int) and e["name"] and isinstance(e["args"], dict)
    kernels = [e for e in slices if e["pid"] == 1 and e["cat"] == "kernel"]
    graph_kernels = sum(1 for n in report.graph.nodes if n.kind == "kernel")
    assert len(kernels) == runs * graph_kernels
    assert all(e["name"].startswith(f"node {e['args']['node']} · ") for e in kernels)
    named = [e for e in kernels if "line" in e["args"]]
    assert len(named) == len(kernels)  # the recordings gave every kernel node its line
    for e in named:  # the user's line, then the library's that issued the op
        where = f"{os.path.basename(e['args']['line'])}"
        if "library line" in e["args"]:
            where += f" ({os.path.basename(e['args']['library line'])})"
        assert f" · {where} · " in e["name"]
    assert all(e["args"]["line"].split(":")[0].endswith(file) or "library line" in e["args"] for e in named)
    assert any(module in e["name"] and e["args"]["module"] == module for e in kernels)
    assert {e["args"]["replay"] for e in kernels} == set(range(1, runs + 1))
    launches = [e for e in slices if e["pid"] == 1 and e["cat"] == "cuda_runtime"]
    assert [e["name"] for e in launches] == [f"replay {i}: cudaGraphLaunch" for i in range(1, runs + 1)]
    eager = [e for e in slices if e["pid"] == 2]
    assert any(e["cat"] == "kernel" and e["name"].startswith("node ") for e in eager)
    assert any(e["cat"] == "cpu_op" and " · " in e["name"] for e in eager)  # an op named by its kernels' line
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[(1, GPU_TID + STREAM)] == f"GPU stream {STREAM}"
    assert names[(1, THREAD)] == f"CPU thread {THREAD}: graph launches"
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert processes == {1: "CUDA graph replays (profiled)", 2: "eager step (profiled)"}


def test_capture_writes_timeline_json_beside_the_report(tmp_path):
    report, _ = _recorded("mlp_inference")
    write_outputs(report, str(tmp_path), render_svg=False)
    path = tmp_path / "timeline.json"
    assert report.outputs["timeline.json"] == str(path)
    assert json.loads(path.read_text())["otherData"]["script"] == report.script
    saved = json.loads((tmp_path / "report.json").read_text())
    # report.json names the file and its event count instead of holding the events twice (the 3,000-node bar)
    n = len(report.node_lines.timeline.slices)
    assert saved["node_lines"]["timeline"] == {"file": "timeline.json", "events": n} and n > 0
    assert Report.from_json(saved).node_lines.timeline.slices == []
    # the events themselves survive the worker's report (to_json / from_json), times to the ns
    again = Timeline.from_json(report.node_lines.timeline.to_json())
    assert again == Timeline.from_json(again.to_json()) and len(again.slices) == n


def test_no_timeline_no_file(tmp_path):
    report, _ = _recorded("mlp_inference")
    report.node_lines.timeline = None
    assert not has_timeline(report)
    write_outputs(report, str(tmp_path), render_svg=False)
    assert not (tmp_path / "timeline.json").exists() and "timeline.json" not in report.outputs
