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
    expected = ["graph.dot", "graph.driver.dot", "report.json"] + (["graph.svg"] if shutil.which("dot") else [])
    assert names == sorted(expected)  # nothing half-written or temporary left behind
    data = json.loads((out / "report.json").read_text())
    assert set(data["outputs"]) == set(expected)
    back = read_graph_file(str(out / "graph.dot"))
    assert len(back.nodes) == len(sample_graph().nodes) and len(back.edges) == 2
    assert "write_dots_ms" in data["settings"]


def test_unwritable_out_dir_is_an_environment_error(tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("")
    with pytest.raises(CgtoolError) as info:
        prepare_out_dir(str(blocker / "sub"))
    assert info.value.exit_code == 3
