"""report.json's text (cgtool/render/json_text.py) and the fast read of a graph's nodes (cgtool/graph/model.py): the
layout json.dumps(indent=1) wrote, a long list one element per line, the same data back; and a 3,000-node report
written and read as `capture` does.

    python tests/test_json_text.py    # median of 5: write and read of a 3,000-node report.json, in ms
"""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cgtool.files.inputs import GRAPH, read_json
from cgtool.graph.model import KINDS, Graph, GraphNode, _checked_fields, _plain_fields
from cgtool.model.frame import Frame
from cgtool.model.node_profile import NodeProfile, NodeSource
from cgtool.model.report import Report, Timings
from cgtool.render.json_text import LONG_LIST, json_text
from cgtool.render.outputs import report_text, write_outputs

CODEC = Path(__file__).parent / "data" / "codec"

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6) | st.tuples(inner, inner)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=5), max_leaves=40)


def _as_parsed(value: Any) -> Any:
    """What json.loads gives back for `value` (a tuple is a list)."""
    if isinstance(value, (list, tuple)):
        return [_as_parsed(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_parsed(v) for k, v in value.items()}
    return value


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(0, 7))
def test_any_value_reads_back_and_without_long_lists_is_what_json_dumps_writes(value: Any, long_list: int) -> None:
    text = json_text(value, long_list=long_list)
    assert json.loads(text) == _as_parsed(value)
    assert json_text(value, long_list=10**9) == json.dumps(value, indent=1) + "\n"


def test_keys_and_scalars_as_json_dumps_writes_them() -> None:
    value = {"é": "ü\n\"", 3: [math.inf, -math.inf, 1e300, 0.1], 2.5: True, True: None, None: [], "": {}}
    assert json_text(value) == json.dumps(value, indent=1) + "\n"
    assert json.loads(json_text(value, long_list=0)) == json.loads(json.dumps(value))
    nan = json.loads(json_text([math.nan] * 3, long_list=1))
    assert len(nan) == 3 and all(math.isnan(x) for x in nan)


def test_a_value_json_dumps_refuses_is_refused() -> None:
    for bad in ({(1, 2): 3}, [object()], {"a": {1, 2}}):
        for long_list in (0, LONG_LIST):
            try:
                json_text(bad, long_list=long_list)
            except TypeError:
                continue
            raise AssertionError(f"{bad!r} was written")


def test_the_small_golden_files_keep_their_bytes() -> None:
    """Every golden file of the codec (the reports, lint results, bench results cgtool writes) is laid out as
    json.dumps(indent=1) laid it out: no list there is long."""
    for path in sorted(CODEC.glob("*.json")):
        text = path.read_text()
        assert json_text(json.loads(text)) == text, path.name


def test_late_values_are_made_after_the_rest_and_written_in_their_place() -> None:
    seen: list[str] = []
    doc = {"a": 1, "phase_ms": {"x": 1.0}, "big": list(range(100))}

    def phases() -> dict[str, float]:
        seen.append("made")
        return {"x": 1.0, "write_json": 2.0}

    text = json_text(doc, late={"phase_ms": phases})
    assert seen == ["made"]
    assert json.loads(text) == {**doc, "phase_ms": {"x": 1.0, "write_json": 2.0}}
    assert text == json.dumps({**doc, "phase_ms": phases()}, indent=1) + "\n"


# -- a 3,000-node report, as samples/deep_1000.py's capture writes it --------------------------------------------------

GEMM = "_ZN7cutlass7Kernel2I57cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE"
ELEMENTWISE = "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_21launch_clamp_scalarERNS_18TensorIteratorBaseE"


def deep_report(blocks: int = 1000) -> Report:
    """Three kernels a block (Linear, ReLU, residual add), a chain of edges, and each node's line."""
    nodes, edges, sources = [], [], []
    for b in range(blocks):
        for k, (mangled, name) in enumerate(((GEMM, "gemm"), (ELEMENTWISE, "relu"), (ELEMENTWISE, "add"))):
            i = 3 * b + k
            nodes.append(GraphNode(i, "kernel", name=name, mangled=mangled, demangled=f"{mangled} (demangled)",
                                   grid=(4, 1, 1), block=(128, 1, 1), shared_mem=0))
            edges.extend([(i - 1, i)] if i else [])
            sources.append(NodeSource(i, "aten.addmm" if k == 0 else "aten.relu", k, 3 + k, f"{b}.fc", "capture",
                                      1.25 + k))
    frames = [Frame("deep_1000.py", 30 + j, "forward", "return x + torch.relu(self.fc(x))") for j in range(6)]
    return Report("/x/deep_1000.py", "step", status="captured", device="cuda", environment={"gpu": "H100"},
                  settings={"warmup": 3}, graph=Graph(tuple(nodes), tuple(edges), "cuda"),
                  timings=Timings(900.0, 80.0, 50), phase_ms={"capture": 12.5, "read_graph": 120.0},
                  node_lines=NodeProfile(frames=frames, nodes=sources, replays=5, replay_us=75.5, kernels=len(nodes),
                                         kernels_mapped=len(nodes)), cgtool_version="0.1.0")


def test_a_3000_node_report_json_is_one_line_per_element_and_reads_back_the_same(tmp_path: Path) -> None:
    report = deep_report()
    write_outputs(report, str(tmp_path), render_svg=False, html=False)
    text = (tmp_path / "report.json").read_text()
    back = json.loads(text)
    assert back == report.to_json()
    assert back["phase_ms"]["write_json"] >= 0 and back["phase_ms"]["write_dots"] >= 0  # in the file it times
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line in ('  "nodes": [', '  "edges": [')]  # in the file's order
    lists = (back["graph"]["nodes"], back["graph"]["edges"], back["node_lines"]["nodes"])
    assert len(starts) == len(lists)
    for start, items in zip(starts, lists):
        assert [json.loads(line.strip().rstrip(",")) for line in lines[start + 1:start + 1 + len(items)]] == items
        assert lines[start + 1 + len(items)] in ("  ]", "  ],")
    assert len(lines) < 3 * 3000 + 200  # was one line per field: 50,000 lines
    read = Report.from_json(read_json(str(tmp_path / "report.json"), GRAPH))
    assert read.graph == report.graph and read.node_lines == report.node_lines
    assert read.phase_ms["write_json"] == report.phase_ms["write_json"]


def test_report_text_sets_the_write_json_phase() -> None:
    report = deep_report(blocks=2)
    doc = json.loads(report_text(report, {}))
    assert doc["phase_ms"] == report.phase_ms and set(doc["phase_ms"]) == {"capture", "read_graph", "write_json"}


# -- a graph node read by its fast path and by its checked path is the same node ---------------------------------------

field_values = (st.none() | st.booleans() | st.integers(-2, 5) | st.sampled_from([*KINDS[:3], "new-kind", "HtoD"])
                | st.lists(st.integers(0, 3) | st.booleans(), min_size=2, max_size=4)
                | st.dictionaries(st.sampled_from(["func", "kind"]), st.integers(0, 3), max_size=2))
node_dicts = st.dictionaries(st.sampled_from(["id", "kind", "graph", "name", "mangled", "grid", "block", "bytes",
                                              "child", "attrs", "extra"]), field_values, max_size=8)


@settings(max_examples=300, deadline=None)
@given(node_dicts)
def test_a_node_reads_the_same_by_the_fast_and_the_checked_path(data: dict[str, Any]) -> None:
    try:
        checked = _checked_fields(data, "node")
    except ValueError:
        assert _plain_fields(data) is None
        return
    plain = _plain_fields(data)
    assert plain is None or plain == checked
    kwargs = dict(checked)
    if kwargs["kind"] not in KINDS:
        kwargs["attrs"], kwargs["kind"] = {**kwargs.get("attrs", {}), "kind": kwargs["kind"]}, "unknown"
    made = GraphNode(**kwargs)
    node = GraphNode.from_json(data)
    assert node == made and hash(node) == hash(made) and repr(node) == repr(made) and vars(node) == vars(made)


def _median_ms(run: Any, n: int = 5) -> float:
    times = []
    for _ in range(n):
        gc.collect()  # each run starts from the same heap: a collection left over from the last is not counted
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


if __name__ == "__main__":  # the timing behind the commit: cgtool's writer and reader of a 3,000-node report.json
    from cgtool.render.files import write_output

    report, folder = deep_report(), tempfile.mkdtemp()
    path = os.path.join(folder, "report.json")
    write_ms = _median_ms(lambda: write_output(path, report_text(report, {}), follow_links=False))
    read_ms = _median_ms(lambda: Report.from_json(read_json(path, GRAPH)))
    sys.stdout.write(f"{len(report.graph.nodes) if report.graph else 0} nodes, {os.path.getsize(path)} bytes: "
                     f"write {write_ms:.1f} ms, read {read_ms:.1f} ms (median of 5)\n")
