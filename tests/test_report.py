import json

from cgtool.graph.model import Graph, GraphNode
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.report import ErrorRecord, ReplayCheck, Report, TensorDiff, Timings


def sample_graph() -> Graph:
    nodes = (
        GraphNode(0, "kernel", name="gemm", mangled="_Zgemm", demangled="gemm()", grid=(8, 2, 1), block=(128, 1, 1),
                  shared_mem=1024),
        GraphNode(1, "memcpy", name="memcpy HtoD", copy_kind="HtoD", bytes=4096),
        GraphNode(2, "graph", name="child graph", child=1),
        GraphNode(3, "memset", graph=1, name="memset", bytes=64, attrs={"value": 0}),
        GraphNode(4, "unknown", name="type 99", attrs={"type_id": 99}),
    )
    return Graph(nodes, ((0, 1), (1, 2)), "cuda")


def test_graph_round_trip_is_lossless():
    g = sample_graph()
    assert Graph.from_json(json.loads(json.dumps(g.to_json()))) == g
    assert g.nodes[0].launch == "<<<{8,2,1},128,1024>>>"
    assert g.count_by_kind()["kernel"] == 1


def test_report_round_trip():
    r = Report(script="/x/s.py", entry="step", status="captured", device="cuda", graph=sample_graph(),
               replay=ReplayCheck("match", "inputs(4), fresh", (TensorDiff("output", (2, 3), "torch.float32", 0.0, 0.0, True),)),
               timings=Timings(690.0, 86.0, 100, 12.0, 3.0, "events"),
               findings=[Finding("CG101", "sync", "error", "m", "/x/s.py", 3, "x.item()", "h")],
               errors=[ErrorRecord("capture", "RuntimeError", "boom", (Frame("/x/s.py", 3, "step", "x.item()"),),
                                   "cudaErrorStreamCaptureInvalidated")])
    data = json.loads(json.dumps(r.to_json()))
    assert data["schema"] == 2
    assert data["graph"]["counts"]["nodes"] == 5
    assert abs(data["timings"]["speedup"] - 690 / 86) < 1e-9
    back = Report.from_json(data)
    assert back.graph == r.graph
    assert back.replay == r.replay
    assert back.timings == r.timings
    assert back.findings == r.findings
    assert back.errors == r.errors
    assert back.errors[0].user_frame.line == 3


def test_unsupported_schema_rejected():
    import pytest

    with pytest.raises(ValueError, match="schema"):
        Report.from_json({"schema": 99, "script": "", "entry": "", "status": ""})


def test_capture_failure_translation():
    from cgtool.checks.capture import check_capture_failure
    from cgtool.model.rules import finding

    fr = (Frame("/x/s.py", 7, "step", "y = conv(x)"),)
    lazy = ErrorRecord("capture", "RuntimeError", "Capturing cudnnFind is prohibited. Possible causes ...", fr)
    [f] = check_capture_failure(lazy, [])
    assert f.rule == "CG403" and f.category == "warmup" and f.line == 7
    raw = ErrorRecord("capture", "RuntimeError", "operation failed", fr, "cudaErrorStreamCaptureInvalidated")
    [f] = check_capture_failure(raw, [])
    assert f.rule == "CG501" and "cudaErrorStreamCaptureInvalidated" in f.message and f.line == 7
    from dataclasses import replace

    from cgtool.checks.verdict import judge
    from cgtool.model.report import CAPTURE_FAILED

    at_failure = judge([finding("CG101", file="/x/s.py", line=7)], CAPTURE_FAILED, raw, None)
    assert at_failure[0].evidence == "confirmed"
    assert check_capture_failure(raw, at_failure) == []  # the trace explains the failure: no CG501
    elsewhere = judge([finding("CG101", file="/x/s.py", line=3)], CAPTURE_FAILED, raw, None)
    assert elsewhere[0].evidence == "untested"
    [f] = check_capture_failure(raw, elsewhere)  # a finding at another line does not explain it
    assert f.rule == "CG501"
    no_frame = replace(raw, frames=())
    assert check_capture_failure(no_frame, [finding("CG101", file="/x/s.py", line=3)]) == []


def test_the_real_capture_confirms_or_refutes_what_the_trace_predicts():
    from cgtool.checks.verdict import judge
    from cgtool.model.report import CAPTURED, ReplayCheck
    from cgtool.model.rules import finding

    sync = finding("CG101", "`.item()` reads a GPU value on the host", file="/x/s.py", line=5)
    copy = finding("CG402", "`torch.tensor(..., device=...)` copies Python data to the GPU every iteration",
                   file="/x/s.py", line=6)
    shape = finding("CG301", "tensor shapes change between steady-state iterations", file="/x/s.py", line=7)
    match = ReplayCheck("match", "inputs(4), fresh")
    s, c, d = judge([sync, copy, shape], CAPTURED, None, match)
    assert (s.evidence, s.severity) == ("refuted", "info") and "the real capture succeeded" in s.message
    assert (c.evidence, c.severity) == ("refuted", "info") and "replay matched eager on inputs(4)" in c.message
    assert (d.evidence, d.severity) == ("untested", "error")  # the trace saw the shape change itself
    mismatch = ReplayCheck("mismatch", "inputs(4), fresh")
    s, c, _ = judge([sync, copy, shape], CAPTURED, None, mismatch)
    assert (s.evidence, c.evidence, c.severity) == ("refuted", "confirmed", "error")
    [c] = judge([copy], CAPTURED, None, None)  # no replay check ran
    assert (c.evidence, c.severity) == ("untested", "error")


def test_graph_memory_in_the_report_and_the_piecewise_pool_round_trip():
    from rich.console import Console

    from cgtool.model.graph_memory import GraphMemory
    from cgtool.model.partial import Piecewise
    from cgtool.render.capture import render_report

    mem = GraphMemory(34 << 20, 30 << 20, 4096, 65536, 33 << 20)
    report = Report(script="s.py", entry="step", status="captured", device="cuda", memory=mem)
    back = Report.from_json(json.loads(json.dumps(report.to_json())))
    assert back.memory == mem
    out = Console(record=True, width=200, no_color=True)
    render_report(back, out)
    assert "memory: graph pool 34.0 MiB (30.0 MiB in live tensors)" in out.export_text()
    pw = Piecewise("measured", "m", pool_bytes=12 << 20, pool_allocated_bytes=10 << 20)
    assert Piecewise.from_json(pw.to_json()) == pw
