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
    assert data["schema"] == 4
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
    assert (s.evidence, s.severity) == ("refuted", "info") and "the real capture succeeded" in s.reason and s.text == f"{sync.message} [refuted: {s.reason}]"
    assert (c.evidence, c.severity) == ("refuted", "info") and "replay matched eager on inputs(4)" in c.reason and c.message == copy.message
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
def test_a_failed_capture_gets_the_whole_steps_findings_marked_not_reached():
    """Issue 20: the GPU trace stops at the first failure; the CPU analysis of the whole step adds the rest."""
    from cgtool.checks.verdict import complete_with_whole_step, judge
    from cgtool.model.report import CAPTURE_FAILED
    from cgtool.model.rules import finding

    raw = ErrorRecord("capture", "RuntimeError", "operation not permitted when stream is capturing",
                      (Frame("/x/s.py", 14, "step", "y = x[x > 0]"),), "cudaErrorStreamCaptureUnsupported")
    gpu = judge([finding("CG102", file="/x/s.py", line=14)], CAPTURE_FAILED, raw, None)
    cpu = [finding("CG102", file="/x/s.py", line=14), finding("CG101", file="/x/s.py", line=15),
           finding("CG402", file="/x/s.py", line=16), finding("CG503", file="/x/s.py", line=2)]
    merged = complete_with_whole_step(gpu, cpu, raw)
    assert [(f.rule, f.line, f.evidence) for f in merged] == [
        ("CG102", 14, "confirmed"), ("CG101", 15, "not-reached"), ("CG402", 16, "not-reached")]
    assert "the real capture stopped at line 14" in merged[1].text and merged[1].message == cpu[1].message and merged[1].severity == "error"
    assert merged[1].status == " (not reached by the capture)" and merged[0].status == " (confirmed by the capture)"


def test_every_renderer_shows_the_evidence_mark():
    from cgtool.model.lint_result import ANALYSED, LintResult, ScriptResult
    from cgtool.model.rules import finding
    from cgtool.render.github import render_github
    from cgtool.render.junit import render_junit
    from cgtool.render.sarif import render_sarif

    f = replace_evidence(finding("CG101", "`.item()` reads a GPU value", file="/x/s.py", line=15), "not-reached")
    result = LintResult(scripts=[ScriptResult(path="/x/s.py", entry="step", status=ANALYSED, device="cuda",
                                              findings=[f])], version="t", device="cuda")
    assert "(not reached by the capture)" in render_github(result)
    assert "(not reached by the capture)" in render_junit(result)
    sarif = render_sarif(result)
    run_result = sarif["runs"][0]["results"][0] if isinstance(sarif, dict) else None
    if run_result is None:
        import json

        run_result = json.loads(sarif)["runs"][0]["results"][0]
    assert run_result["properties"]["evidence"] == "not-reached"
    assert "(not reached by the capture)" in run_result["message"]["text"]


def replace_evidence(f, evidence):
    from dataclasses import replace

    return replace(f, evidence=evidence)


def test_the_whole_steps_finding_at_the_failing_line_is_the_confirmed_cause():
    from cgtool.checks.verdict import complete_with_whole_step
    from cgtool.model.rules import finding

    raw = ErrorRecord("capture", "RuntimeError", "operation not permitted when stream is capturing",
                      (Frame("/x/s.py", 25, "step", "finished = done.query()"),), "cudaErrorStreamCaptureUnsupported")
    gpu = [finding("CG501", "capture failed", file="/x/s.py", line=25)]  # the GPU trace did not explain it
    merged = complete_with_whole_step(gpu, [finding("CG105", file="/x/s.py", line=25)], raw)
    assert [(f.rule, f.evidence) for f in merged] == [("CG105", "confirmed")]


def test_a_schema_2_report_still_reads_and_renders_as_before():
    """Before schema 3 a verdict's reason was appended to the message and `skipped` held sentences: such a report
    reads (reason, kind, origin, predicts null; each skipped sentence a record of code "unknown") and every renderer
    shows the same text; a schema 3 report carries the reason as a field and renders it the same way."""
    from rich.console import Console

    from cgtool.model.report_parts import Skip
    from cgtool.render.findings_console import render_findings

    old = {"schema": 2, "script": "/x/s.py", "entry": "step", "status": "captured", "device": "cuda",
           "findings": [{"rule": "CG101", "category": "sync", "severity": "info", "file": "/x/s.py", "line": 5,
                         "message": "`.item()` reads a GPU value on the host [refuted: the real capture succeeded]",
                         "evidence": "refuted"}],
           "skipped": ["graph.svg: Graphviz `dot` is not installed"]}
    back = Report.from_json(old)
    [f] = back.findings
    assert (f.reason, f.kind, f.origin, f.predicts) == (None, None, None, None)
    assert back.skipped == [Skip("unknown", "graph.svg: Graphviz `dot` is not installed")]
    new = Report.from_json(json.loads(json.dumps(back.to_json())))
    assert new.to_json()["schema"] == 4 and new.skipped == back.skipped
    current = Finding("CG101", "sync", "info", "`.item()` reads a GPU value on the host", "/x/s.py", 5,
                      evidence="refuted", predicts="capture-fails", reason="the real capture succeeded")
    assert Finding.from_json(json.loads(json.dumps(current.to_json()))) == current
    shown = []
    for finding_ in (f, current):
        out = Console(record=True, width=300, no_color=True)
        render_findings([finding_], out)
        shown.append(out.export_text())
    assert shown[0] == shown[1] and "host [refuted: the real capture succeeded] (refuted by the capture)" in shown[0]


def test_a_pre_schema_3_cpu_skip_sentence_reads_as_its_code():
    """A decision reads a skipped entry's code: the one older sentence a renderer needs is mapped to it."""
    from cgtool.model.report_parts import NO_CUDA, OLDER_REPORT, Skip

    assert Skip.from_json("capture, graph, replay check and timing need a CUDA device").code == NO_CUDA
    assert Skip.from_json("graph.svg: cannot write").code == OLDER_REPORT


def test_phase_times_have_their_own_field_and_old_reports_keep_theirs():
    """Schema 4: phase times in `phase_ms`; a schema-3 report's `*_ms` settings move there when read."""
    r = Report(script="/x/s.py", entry="step", settings={"warmup": 3}, phase_ms={"capture": 1.5, "write_dots": 2.0})
    data = json.loads(json.dumps(r.to_json()))
    assert data["phase_ms"] == {"capture": 1.5, "write_dots": 2.0} and data["settings"] == {"warmup": 3}
    assert Report.from_json(data).phase_ms == r.phase_ms
    old = {**data, "schema": 3, "settings": {"warmup": 3, "node_lines": True, "read_graph_ms": 4.0, "driver_dot_ms": 1}}
    del old["phase_ms"]
    back = Report.from_json(old)
    assert back.settings == {"warmup": 3, "node_lines": True} and back.phase_ms == {"read_graph": 4.0, "driver_dot": 1.0}
