"""Comparing two graphs: totals, kinds and kernels that changed, growth in percent."""

import os
from pathlib import Path

from cgtool.graph.diff import diff_graphs
from cgtool.graph.driver_dot import read_driver_dot
from cgtool.graph.model import Graph, GraphNode

DATA = Path(os.path.dirname(__file__)) / "data"


def chain(names: list[str]) -> Graph:
    nodes = tuple(GraphNode(id=i, kind="memcpy" if n == "copy" else "kernel", name=n) for i, n in enumerate(names))
    return Graph(nodes, tuple((i, i + 1) for i in range(len(names) - 1)))


def test_identical_graphs_change_nothing():
    g = read_driver_dot(DATA / "mlp20_inference.dot")
    d = diff_graphs(g, g)
    assert d.growth_pct == 0.0
    assert all(r.delta == 0 for r in d.rows)
    assert [r.name for r in d.changed] == ["nodes", "edges", "depth", "width", "kernels"]  # totals always shown


def test_added_and_removed_by_kind_and_kernel():
    before = chain(["mm", "relu"] * 10)
    after = chain(["mm", "relu", "add"] * 10 + ["copy"])
    d = diff_graphs(before, after)
    totals = {r.name: (r.before, r.after, r.delta) for r in d.rows if r.group == "total"}
    assert totals == {"nodes": (20, 31, 11), "edges": (19, 30, 11), "depth": (20, 31, 11), "width": (1, 1, 0),
                      "kernels": (20, 30, 10)}
    assert [(r.group, r.name, r.delta) for r in d.changed if r.group != "total"] == [
        ("kind", "kernel", 10), ("kind", "memcpy", 1), ("kernel", "add", 10)]
    assert d.growth_pct == 55.0
    assert d.to_json()["growth_pct"] == 55.0 and d.to_json()["rows"][0] == {
        "group": "total", "name": "nodes", "before": 20, "after": 31, "delta": 11}


def test_shrinking_graph_and_kernel_rename():
    d = diff_graphs(chain(["a", "b", "c", "d"]), chain(["a", "x"]))
    assert d.growth_pct == -50.0
    kernels = {r.name: r.delta for r in d.rows if r.group == "kernel"}
    assert kernels == {"a": 0, "b": -1, "c": -1, "d": -1, "x": 1}
    assert [r.name for r in d.changed if r.group == "kernel"] == ["x", "b", "c", "d"]  # biggest change, then largest
