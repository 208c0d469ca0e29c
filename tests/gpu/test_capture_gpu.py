"""The capture pipeline on a real GPU: every sample captures, matches the driver's view, replays right."""

import collections
import json
import os

import pytest
from conftest import ROOT
from expect_markers import markers

pytestmark = pytest.mark.gpu
SAMPLES = ["mlp_inference", "transformer_train", "multistream", "deep_1000"]


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_captures_and_matches_driver(name, run_cli, tmp_path):
    from cgtool.graph.driver_dot import read_driver_dot

    out = tmp_path / name
    r = run_cli("capture", os.path.join(ROOT, "samples", f"{name}.py"), "--out", out, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "captured"
    assert report["replay"]["status"] == "match"
    assert report["timings"]["speedup"] > 1.0
    assert "faster" in r.stdout
    ours = report["graph"]
    driver = read_driver_dot((out / "graph.driver.dot").read_text())
    assert len(driver.nodes) == len(ours["nodes"])
    assert len(driver.edges) == len(ours["edges"])
    ours_k = collections.Counter(n.get("mangled") for n in ours["nodes"] if n["kind"] == "kernel")
    theirs_k = collections.Counter(n.mangled for n in driver.nodes if n.kind == "kernel")
    assert ours_k == theirs_k
    assert (out / "graph.dot").exists()


def test_failed_capture_names_the_line_and_keeps_standing(run_cli, tmp_path):
    path = os.path.join(ROOT, "samples", "hazards", "item_sync.py")
    line = markers(path)[0][0]
    r = run_cli("capture", path, "--out", tmp_path / "o", timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["status"] == "capture-failed"
    assert any(f["line"] == line and f["file"] == path for f in report["findings"])
    assert f"item_sync.py:{line}" in r.stdout


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
