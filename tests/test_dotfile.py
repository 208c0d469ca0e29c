"""The DOT tokenizer/parser: the grammar driver dumps and cgtool use, escapes, and errors with line numbers."""

import os
import time

import pytest

from cgtool.errors import CgtoolError, ExitCode
from cgtool.graph.dot_records import unquote
from cgtool.graph.dotfile import parse_dot

DATA = os.path.join(os.path.dirname(__file__), "data")


def read(name: str) -> str:
    with open(os.path.join(DATA, name)) as fh:
        return fh.read()


def test_driver_fixture_structure():
    dot = parse_dot(read("mlp20_inference.dot"))
    assert dot.directed and dot.name == "dot"
    assert len(dot.nodes) == 40 and len(dot.edges) == 39
    assert list(dot.subgraphs) == ["cluster_1"]
    assert dot.subgraphs["cluster_1"].attrs == {"label": "graph_1", "style": "dashed"}
    node = dot.nodes["graph_1_node_0"]
    assert node.subgraph == "cluster_1"
    assert node.attrs["shape"] == "record" and node.attrs["label"].startswith("{KERNEL\n| {ID | 0 (topoId: 39)")
    assert "\\<\\<\\<32,128,0\\>\\>\\>" in node.attrs["label"]  # record escapes stay for the label reader
    assert (dot.edges[0].tail, dot.edges[0].head, dot.edges[0].attrs) == ("graph_1_node_0", "graph_1_node_1",
                                                                          {"headlabel": "0"})


def test_attributes_without_separators_and_repeated():
    # The driver writes `shape="invtrapezium"label="0..."` and `style="solid" style="solid"`.
    dot = parse_dot(read("kinds_flags0.dot"))
    assert dot.nodes["graph_1_node_0"].attrs == {"style": "solid", "shape": "invtrapezium",
                                                 "label": "0\nMEMSET\n(0,262144)\n"}
    assert list(dot.subgraphs) == ["cluster_1", "cluster_3", "cluster_4", "cluster_5"]


def test_edge_chains_subgraph_operands_and_ports():
    dot = parse_dot("digraph { a -> b -> c [color=red]; d:p1:n -> {e f}; g -- h }")
    pairs = [(e.tail, e.head) for e in dot.edges]
    assert pairs == [("a", "b"), ("b", "c"), ("d", "e"), ("d", "f"), ("g", "h")]
    assert dot.edges[0].attrs == {"color": "red"} == dot.edges[1].attrs
    assert list(dot.nodes) == ["a", "b", "c", "d", "e", "f", "g", "h"]


def test_strings_comments_html_and_defaults():
    text = """strict digraph "g" {
      // line comment
      /* block
         comment */
      # preprocessor line
      node [shape=box, color=blue];
      rankdir = LR
      "quoted \\"name\\"" [label="a" + "b", tooltip="x\\ny"];
      h [label=<<b>bold</b> <i>x</i>>];
      subgraph cluster_x { node [color=green]; inner; label="X" }
      outer;
      flag [filled];
    }"""
    dot = parse_dot(text)
    assert dot.name == "g" and dot.attrs == {"rankdir": "LR"}
    q = dot.nodes['quoted "name"']
    assert q.attrs == {"shape": "box", "color": "blue", "label": "ab", "tooltip": "x\\ny"}
    assert dot.nodes["h"].attrs["label"] == "<b>bold</b> <i>x</i>"
    assert dot.nodes["inner"].attrs["color"] == "green" and dot.nodes["inner"].subgraph == "cluster_x"
    assert dot.nodes["outer"].attrs["color"] == "blue" and dot.nodes["outer"].subgraph is None
    assert dot.subgraphs["cluster_x"].attrs == {"label": "X"}
    assert dot.nodes["flag"].attrs["filled"] == "true"


def test_unquote_only_resolves_dot_escapes():
    assert unquote('"a\\"b"') == 'a"b'
    assert unquote('"line\\\ncontinued"') == "linecontinued"
    assert unquote('"keep \\< and \\n"') == "keep \\< and \\n"


@pytest.mark.parametrize(
    "text, line, words",
    [
        ('digraph {\n a [label="never closed\n', 2, "never closed (is the file truncated?)"),
        ("digraph {\n a -> b;\n", 3, "expected '}' to close the graph, found the end of the file (is the file truncated?)"),
        ("digraph {\n a -> ;\n}", 2, "expected a node name"),
        ("hello world", 1, "expected 'digraph' or 'graph'"),
        ("digraph { a }\ndigraph { b }", 2, "one graph per file"),
        ("digraph {\n\n a @ b }", 3, "unexpected character '@'"),
        ("digraph { /* open", 1, "comment is never closed"),
        ("digraph {\n a [label=<<b>x</b>]\n}", 2, "never closed"),
        ("digraph { a [label=] }", 1, "a value for attribute label"),
    ],
)
def test_errors_name_the_line(text, line, words):
    with pytest.raises(CgtoolError) as err:
        parse_dot(text, "in.dot")
    assert err.value.exit_code == ExitCode.USAGE
    assert err.value.message.startswith(f"in.dot:{line}: ")
    assert words in err.value.message


def test_truncated_fixture_and_empty_text():
    with pytest.raises(CgtoolError, match=r"^t.dot:76: a quoted string is never closed"):
        parse_dot(read("truncated.dot"), "t.dot")
    with pytest.raises(CgtoolError, match="empty"):
        parse_dot("  \n", "e.dot")


def test_three_thousand_record_nodes_parse_quickly():
    label = "{KERNEL\\n| {ID | %d (topoId: 1) | k\\<\\<\\<1,128,0\\>\\>\\>} | {cooperative | 0}}"
    nodes = "".join(f'"n{i}"[style="bold" shape="record" label="{label % i}"];\n' for i in range(3000))
    edges = "".join(f'"n{i}" -> "n{i + 1}" [headlabel=0];\n' for i in range(2999))
    text = "digraph dot {\nsubgraph cluster_1 {\n" + nodes + edges + "}\n}\n"
    start = time.perf_counter()
    dot = parse_dot(text)
    elapsed = time.perf_counter() - start
    assert len(dot.nodes) == 3000 and len(dot.edges) == 2999
    assert elapsed < 2.0  # about 0.05 s here; loose so a busy CI machine does not flake
