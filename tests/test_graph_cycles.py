"""Issue 34: a CUDA graph has no cycle; a file whose graph has one (an edge loop, a self-loop, child graphs that
embed each other) is refused by the one reader `dot` uses, summary and diff alike: exit 2, `FILE: not a DAG:
cycle through nodes A -> B -> A` (docs/dot.md), never a summary of "0 roots, 0 leaves"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cgtool.errors import CgtoolError, ExitCode
from cgtool.graph.graph_file import read_graph_file
from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.topology import find_cycle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CYCLES = os.path.join(ROOT, "tests", "data", "cycles")
MLP = os.path.join(ROOT, "tests", "data", "mlp20_inference.dot")
FIXTURES = {
    "driver_cycle.dot": "graph_1_node_1 -> graph_1_node_2 -> graph_1_node_1",
    "driver_self_loop.dot": "graph_1_node_1 -> graph_1_node_1",
    "driver_embeds_itself.dot": "graph_1_node_0 -> graph_2_node_0 -> graph_1_node_0 (child graphs that embed each other)",
    "cgtool_cycle.dot": "0 -> 1 -> 2 -> 0",
    "graph_self_loop.json": "2 -> 2",
}


def graph(n: int, edges, children=None) -> Graph:
    children = children or {}
    return Graph(tuple(GraphNode(i, "graph" if i in children else "kernel", graph=0 if i < n // 2 else 1,
                                 child=children.get(i)) for i in range(n)), tuple(edges))


@pytest.mark.parametrize("name, cycle", FIXTURES.items())
def test_each_fixture_is_refused_naming_its_cycle(name, cycle):
    path = os.path.join(CYCLES, name)
    with pytest.raises(CgtoolError) as caught:
        read_graph_file(path)
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.message == f"{path}: not a DAG: cycle through nodes {cycle}; a CUDA graph has no cycle"


def test_find_cycle():
    assert find_cycle(graph(4, [(0, 1), (1, 2), (2, 3)])) is None
    assert find_cycle(graph(4, [(0, 1), (1, 2), (2, 1)])) == [1, 2, 1]
    assert find_cycle(graph(4, [(3, 3)])) == [3, 3]
    assert find_cycle(graph(4, [(0, 1), (0, 2), (1, 3), (2, 3)])) is None  # a diamond
    # node 0 (graph 0) embeds graph 1, whose node 2 embeds graph 0 again
    assert find_cycle(graph(4, [], {0: 1, 2: 0})) == [0, 2, 0]
    assert find_cycle(graph(4, [], {0: 1})) is None
    long = Graph(tuple(GraphNode(i, "kernel") for i in range(50_000)),
                 tuple((i, i + 1) for i in range(49_999)) + ((49_999, 0),))
    assert len(find_cycle(long)) == 50_001  # no recursion limit


def test_a_long_cycle_is_named_by_its_ends(tmp_path):
    import json

    g = Graph(tuple(GraphNode(i, "kernel") for i in range(100)), tuple((i, i + 1) for i in range(99)) + ((99, 0),))
    (tmp_path / "g.json").write_text(json.dumps(g.to_json()))
    with pytest.raises(CgtoolError, match=r"nodes 0 -> 1 -> 2 -> 3 -> 4 -> 5 -> … 90 more … -> 96 -> 97 -> 98 -> 99 -> 0;"):
        read_graph_file(tmp_path / "g.json")


@pytest.mark.parametrize("args", [["{f}"], ["{f}", "--json"], ["{f}", "-o", "x.dot"], [MLP, "--diff", "{f}"],
                                  ["{f}", "--diff", MLP]])
def test_dot_summary_diff_and_picture_refuse_a_cycle(tmp_path, args):
    path = os.path.join(CYCLES, "driver_cycle.dot")
    r = subprocess.run([sys.executable, "-m", "cgtool", "dot", *(a.format(f=path) for a in args)], cwd=tmp_path,
                       capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"), timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "not a DAG: cycle through nodes graph_1_node_1 -> graph_1_node_2 -> graph_1_node_1" in r.stderr
    assert "roots" not in r.stdout and not (tmp_path / "x.dot").exists()
