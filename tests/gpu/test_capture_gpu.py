"""The capture pipeline on a real GPU: every sample captures, matches the driver's view, replays right; the
performance bar of reading a 3,000-node graph; a failed capture; the reader on a hand-built graph."""

import collections
import json
import os
import tempfile
import time

import pytest
from conftest import ROOT
from expect_markers import markers

pytestmark = pytest.mark.gpu
SAMPLES = ["mlp_inference", "transformer_train", "multistream", "deep_1000"]


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_captures_and_matches_driver(name, sample_capture, measured):
    from cgtool.graph.driver_dot import read_driver_dot

    r, out, wall = sample_capture(name)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(out, "report.json")) as fh:
        report = json.load(fh)
    assert report["status"] == "captured"
    assert report["replay"]["status"] == "match"
    assert report["timings"]["speedup"] > 1.0
    assert "faster" in r.stdout
    ours = report["graph"]
    with open(os.path.join(out, "graph.driver.dot")) as fh:
        driver = read_driver_dot(fh.read())
    measured(f"{len(ours['nodes'])} nodes/{len(ours['edges'])} edges (driver {len(driver.nodes)}/{len(driver.edges)}); "
             f"{[ln for ln in r.stdout.splitlines() if 'faster' in ln][-1]}", wall_s=round(wall, 1),
             speedup=report["timings"]["speedup"], max_abs=report["replay"].get("max_abs"))
    assert len(driver.nodes) == len(ours["nodes"])
    assert len(driver.edges) == len(ours["edges"])
    ours_k = collections.Counter(n.get("mangled") for n in ours["nodes"] if n["kind"] == "kernel")
    theirs_k = collections.Counter(n.mangled for n in driver.nodes if n.kind == "kernel")
    assert ours_k == theirs_k
    assert os.path.exists(os.path.join(out, "graph.dot"))


def test_deep_1000_graph_read_and_written_in_under_a_second(sample_capture, measured, tmp_path):
    """The performance bar: read the 3,000-node graph, write both DOT files and report.json, and read report.json
    back, in < 1 s. The JSON part is cgtool's own writer (render/outputs.py: report_text, then the atomic write) and
    reader (files/inputs.py: read_json, then Report.from_json, as `cgtool dot` and `cgtool report` read it)."""
    from cgtool.files.inputs import GRAPH, read_json
    from cgtool.model.report import Report
    from cgtool.render.files import write_output
    from cgtool.render.outputs import report_text

    r, out, _wall = sample_capture("deep_1000")
    assert r.returncode == 0, r.stdout + r.stderr
    t0 = time.perf_counter()
    report = Report.from_json(read_json(os.path.join(out, "report.json"), GRAPH))
    read_ms = (time.perf_counter() - t0) * 1e3
    s = dict(report.phase_ms)
    assert s["write_json"] >= 0  # the capture's own writer timed itself
    t0 = time.perf_counter()
    write_output(str(tmp_path / "report.json"), report_text(report, {}), follow_links=False)
    write_ms = (time.perf_counter() - t0) * 1e3
    total = s["read_graph"] + s["driver_dot"] + s["write_dots"] + write_ms + read_ms
    measured(f"{len(report.graph.nodes) if report.graph else 0} nodes", total_ms=round(total),
             read_ms=round(s["read_graph"]), driver_dot_ms=round(s["driver_dot"]), graph_dot_ms=round(s["write_dots"]),
             json_write_ms=round(write_ms), json_read_ms=round(read_ms), capture_write_json_ms=round(s["write_json"]),
             capture_ms=round(report.timings.capture_ms or 0) if report.timings else 0)
    assert total < 1000


def test_failed_capture_names_the_line_and_keeps_standing(run_cli, tmp_path):
    path = os.path.join(ROOT, "samples", "hazards", "item_sync.py")
    line = markers(path)[0][0]
    r = run_cli("capture", path, "--out", tmp_path / "o", timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["status"] == "capture-failed"
    assert any(f["line"] == line and f["file"] == path for f in report["findings"])
    assert f"item_sync.py:{line}" in r.stdout
    assert report["errors"][0].get("cuda_error")


def test_capture_job_in_process_without_the_cli():
    """The pipeline called directly (no worker, no checks), as the first GPU smoke test did."""
    from cgtool.model.job import CaptureSettings, Job
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline.capture_job import capture_job

    with tempfile.TemporaryDirectory() as wd:
        job = Job("capture", os.path.join(ROOT, "samples", "mlp_inference.py"), "step",
                  CaptureSettings(warmup=3, capture_mode="global", checks=False), work_dir=wd)
        report = capture_job(job, PhaseLog())
        assert report.status == "captured", report.errors
        assert report.graph is not None and report.graph.kernels
        assert report.replay is not None and report.replay.status == "match"
        assert os.path.exists(os.path.join(wd, "graph.driver.dot"))


def test_reader_handles_child_graph_memset_event_empty_nodes():
    """Build a graph by hand through the runtime API and read it back."""
    import torch
    from cuda.bindings import runtime as rt

    from cgtool.graph.cuda import read_cuda_graph

    torch.cuda.init()
    buf = torch.zeros(1024, device="cuda", dtype=torch.uint8)
    err, child = rt.cudaGraphCreate(0)
    assert int(err) == 0
    ms = rt.cudaMemsetParams()
    ms.dst = buf.data_ptr()
    ms.value = 7
    ms.elementSize = 1
    ms.width = 1024
    ms.height = 1
    ms.pitch = 0
    err, m = rt.cudaGraphAddMemsetNode(child, None, 0, ms)
    assert int(err) == 0, err
    err, top = rt.cudaGraphCreate(0)
    err, e = rt.cudaGraphAddEmptyNode(top, None, 0)
    assert int(err) == 0
    err, c = rt.cudaGraphAddChildGraphNode(top, [e], 1, child)
    assert int(err) == 0, err
    err, ev = rt.cudaEventCreate()
    err, rec = rt.cudaGraphAddEventRecordNode(top, [c], 1, ev)
    assert int(err) == 0, err
    g = read_cuda_graph(int(top))
    kinds = collections.Counter(n.kind for n in g.nodes)
    assert kinds == {"empty": 1, "graph": 1, "event_record": 1, "memset": 1}
    child_node = next(n for n in g.nodes if n.kind == "graph")
    memset = next(n for n in g.nodes if n.kind == "memset")
    assert memset.graph == child_node.child and memset.bytes == 1024
    assert len(g.edges) == 2
    rt.cudaGraphDestroy(top)
    rt.cudaGraphDestroy(child)
