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
    assert data["schema"] == 1
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
    explained = [finding("CG101", file="/x/s.py", line=7)]
    assert check_capture_failure(raw, explained) == []
