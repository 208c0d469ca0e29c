import json
import os
import shutil

import pytest
from test_report import sample_graph

from cgtool.errors import CgtoolError
from cgtool.graph.graph_file import read_graph_file
from cgtool.model.report import Report
from cgtool.render.outputs import prepare_out_dir, write_outputs


def test_write_outputs_writes_every_file_atomically(tmp_path):
    driver = tmp_path / "work" / "graph.driver.dot"
    driver.parent.mkdir()
    driver.write_text('digraph dot {\n}\n')
    report = Report(script="/x/s.py", entry="step", status="captured", device="cuda", graph=sample_graph(),
                    outputs={"graph.driver.dot": str(driver)})
    out = tmp_path / "out"
    prepare_out_dir(str(out))
    write_outputs(report, str(out))
    names = sorted(os.listdir(out))
    expected = ["graph.dot", "graph.driver.dot", "report.html", "report.json"] + (["graph.svg"] if shutil.which("dot") else [])
    assert names == sorted(expected)  # nothing half-written or temporary left behind
    page = (out / "report.html").read_text()
    assert "/x/s.py" in page and f'{len(sample_graph().nodes)} nodes' in page
    data = json.loads((out / "report.json").read_text())
    assert set(data["outputs"]) == set(expected)
    back = read_graph_file(str(out / "graph.dot"))
    assert len(back.nodes) == len(sample_graph().nodes) and len(back.edges) == 2
    assert data["phase_ms"]["write_dots"] >= 0 and "write_dots_ms" not in data["settings"]


def test_unwritable_out_dir_is_an_environment_error(tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("")
    with pytest.raises(CgtoolError) as info:
        prepare_out_dir(str(blocker / "sub"))
    assert info.value.exit_code == 3


def test_outputs_follow_the_umask_and_a_failed_report_leaves_the_old_one(tmp_path, monkeypatch):
    import stat

    from cgtool.render import outputs

    out = tmp_path / "out"
    prepare_out_dir(str(out))
    old = os.umask(0o022)
    try:
        write_outputs(Report(script="/x/s.py", entry="step", graph=sample_graph()), str(out), render_svg=False)
    finally:
        os.umask(old)
    assert {stat.S_IMODE(os.stat(out / n).st_mode) for n in os.listdir(out)} == {0o644}  # not mkstemp's 0600

    def full(path, data, **kw):
        raise CgtoolError(f"Cannot write {path}: No space left on device", 3)

    monkeypatch.setattr(outputs, "write_output", full)
    before = (out / "report.json").read_text()
    report = Report(script="/x/s.py", entry="step")
    with pytest.raises(CgtoolError):
        write_outputs(report, str(out), render_svg=False)
    assert (out / "report.json").read_text() == before and "report.json" not in report.outputs
    assert "graph.dot" not in report.outputs
