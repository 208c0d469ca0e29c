"""cgtool's DOT: colours, folding, --max-nodes, reading it back, rendering, and read_graph_file's sniffing."""

import json
import os
import shutil
from pathlib import Path

import pytest

from cgtool.errors import CgtoolError, ExitCode
from cgtool.graph.cgtool_dot import read_cgtool_dot
from cgtool.graph.dotfile import parse_dot
from cgtool.graph.driver_dot import read_driver_dot
from cgtool.graph.graph_file import read_graph_file
from cgtool.graph.model import Graph, GraphNode
from cgtool.model.report import CAPTURED, Report
from cgtool.render.dot import PALETTE, graph_to_dot
from cgtool.render.dot_file import render_file, render_source

DATA = Path(os.path.dirname(__file__)) / "data"
FIXTURES = ["mlp20_inference.dot", "multistream_memcpy.dot", "kinds_all.dot", "kinds_flags0.dot", "if_else_unknown.dot"]
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot program")


def read_back(source: str) -> Graph:
    return read_cgtool_dot(parse_dot(source))


def without_attrs(g: Graph) -> list[GraphNode]:
    return [GraphNode(**{**n.__dict__, "attrs": {}}) for n in g.nodes]


@pytest.mark.parametrize("name", FIXTURES)
def test_unfolded_round_trip_is_exact(name):
    g = read_driver_dot(DATA / name)
    back = read_back(graph_to_dot(g, fold=False).source)
    assert back.nodes == g.nodes and back.edges == tuple(sorted(g.edges)) and back.source == "cgtool-dot"


@pytest.mark.parametrize("name", FIXTURES)
def test_folded_round_trip_gives_every_node_and_edge(name):
    g = read_driver_dot(DATA / name)
    back = read_back(graph_to_dot(g).source)
    assert without_attrs(back) == without_attrs(g)  # copies after the first share its attrs (topo ids)
    assert back.edges == tuple(sorted(g.edges))


def test_folded_run_with_edges_in_and_out_round_trips():
    names = ["embed"] + ["mm", "add", "relu"] * 50 + ["softmax", "copy"]
    nodes = tuple(GraphNode(id=i, kind="kernel", name=n, grid=(4, 1, 1), block=(128, 1, 1), shared_mem=0)
                  for i, n in enumerate(names))
    # In-edges into the first copy, an edge over the whole run, an out-edge from the last copy.
    edges = tuple((i, i + 1) for i in range(len(names) - 1)) + ((0, 2), (0, 151), (150, 152))
    edges = tuple(sorted(set(edges)))
    g = Graph(nodes, edges)
    dot = graph_to_dot(g)
    assert dot.source.count("cg_kind=kernel") == 1 + 3 + 2  # embed, one block, softmax, copy
    back = read_back(dot.source)
    assert back.nodes == g.nodes and back.edges == g.edges


def test_mlp20_folds_into_one_labelled_cluster():
    g = read_driver_dot(DATA / "mlp20_inference.dot")
    src = graph_to_dot(g).source
    assert "subgraph cluster_fold0" in src and 'label="×20  (2 nodes each, 40 in all)"' in src
    assert 'cg_fold_ids="0-39"' in src and "cg_period=2" in src and "cg_link=1" in src
    assert src.count("cg_kind=kernel") == 2
    assert "<<<32,128,0>>>" in src and "gemmSN_TN_kernel<cublasGemvTensorStridedBatched>" in src
    assert graph_to_dot(g, fold=False).source.count("cg_kind=kernel") == 40


def test_colours_by_kind_and_child_clusters():
    g = read_driver_dot(DATA / "kinds_all.dot")
    src = graph_to_dot(g).source
    for kind in ("kernel", "memcpy", "memset", "host", "conditional", "mem_alloc", "event_record"):
        assert f'fillcolor="{PALETTE[kind][0]}"' in src
    assert "subgraph cluster_graph1" in src and "child graph 1 (node 11)" in src
    assert "IF body (graph 2, of node 13)" in src and "WHILE body (graph 3, of node 14)" in src
    assert "cg_visual=1" in src and "compound=true" in src
    assert "memcpy HtoD\\n256.0 KiB" in src


def test_max_nodes_cuts_the_picture_and_the_file_says_so():
    g = read_driver_dot(DATA / "multistream_memcpy.dot")
    dot = graph_to_dot(g, max_nodes=3)
    assert dot.graph_attr["cg_truncated"] == "3"
    assert dot.source.count("cg_kind=") == 3 and "… 3 more nodes not drawn (--max-nodes 3)" in dot.source
    with pytest.raises(CgtoolError, match="--max-nodes") as err:
        read_back(dot.source)
    assert err.value.exit_code == ExitCode.USAGE


def test_odd_characters_in_names_and_attrs_survive():
    node = GraphNode(id=0, kind="unknown", name='<odd "name" \\ 100%>', attrs={"note": 'a "quoted" \\ value'})
    g = Graph((node,), ())
    back = read_back(graph_to_dot(g).source)
    assert back.nodes == g.nodes


@needs_dot
@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_render_formats(tmp_path, fmt, magic):
    g = read_driver_dot(DATA / "kinds_all.dot")
    out = tmp_path / f"g.{fmt}"
    render_file(graph_to_dot(g).source, str(out))
    assert out.read_bytes().startswith(magic)


def test_render_dot_text_and_bad_extension(tmp_path):
    src = graph_to_dot(read_driver_dot(DATA / "mlp20_inference.dot")).source
    render_file(src, str(tmp_path / "g.dot"))
    assert (tmp_path / "g.dot").read_text() == src
    with pytest.raises(CgtoolError, match=r"\.svg, \.png, \.pdf or \.dot") as err:
        render_file(src, str(tmp_path / "g.jpeg"))
    assert err.value.exit_code == ExitCode.USAGE


def test_missing_dot_program_names_the_install_command(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(CgtoolError) as err:
        render_source("digraph { a }", "svg")
    assert err.value.exit_code == ExitCode.ENVIRONMENT
    assert "apt-get install graphviz" in err.value.message and "brew install graphviz" in err.value.message


def test_read_graph_file_sniffs_every_format(tmp_path):
    g = read_driver_dot(DATA / "multistream_memcpy.dot")
    report = Report(script="s.py", entry="step", status=CAPTURED, device="cuda", graph=g)
    (tmp_path / "report.json").write_text(json.dumps(report.to_json()))
    (tmp_path / "graph.json").write_text(json.dumps(g.to_json()))
    (tmp_path / "graph.dot").write_text(graph_to_dot(g).source)
    assert read_graph_file(tmp_path / "report.json") == g
    assert read_graph_file(tmp_path / "graph.json") == g
    back = read_graph_file(tmp_path / "graph.dot")
    assert back.nodes == g.nodes and back.source == "cgtool-dot"
    assert read_graph_file(DATA / "multistream_memcpy.dot") == g


@pytest.mark.parametrize("content, words", [
    ("", "is empty"),
    ("{\"schema\": 1, ", "not valid JSON"),
    ("[1, 2]", "not a cgtool report"),
    ('{"hello": 1}', "neither a cgtool report.json nor a graph"),
    ('{"nodes": [{"id": 0, "kind": "kernel"}], "edges": [[0, 5]]}', "bad node or edge"),
    ("digraph { a -> b }", "not a CUDA graph"),
    ("digraph { }", "has no nodes"),
])
def test_read_graph_file_errors(tmp_path, content, words):
    path = tmp_path / "in.txt"
    path.write_text(content)
    with pytest.raises(CgtoolError, match=words) as err:
        read_graph_file(path)
    assert err.value.exit_code == ExitCode.USAGE


def test_report_without_a_graph_binary_and_missing_files(tmp_path):
    report = Report(script="s.py", entry="step", status="capture-failed")
    (tmp_path / "report.json").write_text(json.dumps(report.to_json()))
    with pytest.raises(CgtoolError, match="holds no graph.*capture-failed"):
        read_graph_file(tmp_path / "report.json")
    (tmp_path / "bin.dot").write_bytes(b"\x00\x01\x02digraph")
    with pytest.raises(CgtoolError, match="binary file"):
        read_graph_file(tmp_path / "bin.dot")
    with pytest.raises(CgtoolError, match="No such file"):
        read_graph_file(tmp_path / "nope.dot")
    with pytest.raises(CgtoolError, match="is a folder"):
        read_graph_file(tmp_path)
