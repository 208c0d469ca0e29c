"""Fuzz the graph readers behind `cgtool dot` (driver DOT, cgtool DOT, report.json, any bytes): a Graph that
summarizes and draws, or a clean CgtoolError (exit 2/3, one line), always quickly."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys

import pytest
from fuzzing import DATA, SHARED_DOTS, dumps, examples, fixture_bytes, mutated, mutated_json, outcome, scratch, text_console
from hypothesis import given
from hypothesis import strategies as st

from cgtool.graph.graph_file import read_graph_file
from cgtool.graph.summary import summarize
from cgtool.render.dot import graph_to_dot
from cgtool.render.graph_summary import render_summary

_TMP = scratch("cgtool-fuzz-dot-")
DRIVER_DOTS = ["mlp20_inference.dot", "multistream_memcpy.dot", "kinds_all.dot", "kinds_flags0.dot",
               "kinds_verbose.dot", "if_else_unknown.dot", "truncated.dot", "garbage.dot"]


def _cgtool_dot() -> bytes:
    """cgtool's own graph.dot of a real driver dump (folded: cg_fold_ids, cg_period, cg_link)."""
    graph = read_graph_file(os.path.join(DATA, "mlp20_inference.dot"))
    return graph_to_dot(graph, max_nodes=len(graph.nodes)).source.encode()


def _report_with_graph() -> dict:
    """A real CPU run's report.json (tests/data/report_cpu.json) carrying a real graph, as a GPU run's would."""
    import json

    from cgtool.graph.summary_counts import graph_counts

    with open(os.path.join(DATA, "report_cpu.json")) as fh:
        report = json.load(fh)
    graph = read_graph_file(os.path.join(DATA, "multistream_memcpy.dot"))
    report.update(status="captured", device="cuda", graph={**graph.to_json(), "counts": graph_counts(graph)})
    return report


def _shared() -> list[bytes]:
    if not os.path.isdir(SHARED_DOTS):
        return []
    out = []
    for name in sorted(os.listdir(SHARED_DOTS)):
        with open(os.path.join(SHARED_DOTS, name), "rb") as fh:
            out.append(fh.read())
    return out


SEEDS = fixture_bytes(*DRIVER_DOTS) + _shared() + [_cgtool_dot(), dumps(_report_with_graph())]
REPORT = _report_with_graph()


def read(data: bytes, name: str = "input.dot"):
    """Write `data` to a file and read it as `cgtool dot` does; then use the graph as `dot` would."""
    path = os.path.join(_TMP, name)
    with open(path, "wb") as fh:
        fh.write(data)
    graph = outcome(read_graph_file, path)
    if graph is not None:  # whatever the readers accept must summarize, print and draw
        summary = summarize(graph)
        render_summary(summary, path, text_console())
        graph_to_dot(graph, max_nodes=200)
        graph_to_dot(graph, fold=False, max_nodes=50)
    return graph


@examples(150)
@given(st.binary(max_size=2000) | st.text(max_size=500).map(str.encode))
def test_random_bytes(data):
    read(data)


@examples(100)
@given(st.text(alphabet=st.sampled_from(list('digraph{}[]"=;->,:<>|\\ \nabc0123_clusterlabel')), max_size=400))
def test_random_dot_shaped_text(text):
    read(text.encode())


@examples(300)
@given(st.data())
def test_mutated_real_files(data):
    seed = data.draw(st.sampled_from(SEEDS))
    read(data.draw(mutated(seed)))


@examples(120)
@given(mutated_json(REPORT))
def test_mutated_report_json(doc):
    read(dumps(doc), "report.json")


@examples(30)
@given(st.integers(1, 3000), st.sampled_from(["subgraph cluster_{i} {{", "{{", "subgraph {{"]))
def test_deep_nesting(depth, opener):
    body = "".join(opener.format(i=i) for i in range(depth)) + "a -> b" + "}" * depth
    read(f"digraph g {{ {body} }}".encode())


@examples(20)
@given(st.integers(1, 5000))
def test_deep_record_labels_and_json(depth):
    read(('digraph g { n [shape=record, label="' + "{" * depth + "KERNEL" + "}" * depth + '"]; }').encode())
    read(("[" * depth + "]" * depth).encode(), "deep.json")
    read(('{"schema": 1, "graph": ' + '{"nodes": ' * depth + "[]" + "}" * depth + "}").encode(), "deep.json")


@examples(10)
@given(st.sampled_from(["label", "name", "cg_attrs", "kernel", "number", "fold"]), st.integers(10_000, 1_000_000))
def test_huge_attributes(where, size):
    big = "A" * size
    text = {
        "label": f'digraph g {{ subgraph cluster_0 {{ n [label="{big}"]; }} }}',
        "name": f"digraph g {{ subgraph cluster_0 {{ {big} -> b; }} }}",
        "cg_attrs": f'digraph g {{ cg_format="cgtool-dot/1"; n [cg_kind="kernel", cg_id="0", cg_attrs="{big}"]; }}',
        "kernel": f'digraph g {{ subgraph cluster_0 {{ n [shape=octagon, label="0\\n{big}<<<1,1,0>>>"]; }} }}',
        "number": f'digraph g {{ subgraph cluster_0 {{ n [label="0\\nMEMCPY\\n(HtoD,{"9" * min(size, 100_000)})"]; }} }}',
        "fold": 'digraph g { cg_format="cgtool-dot/1"; subgraph cluster_f { cg_fold_ids="0-' + "9" * (size % 30 + 1)
                + '"; cg_period="1"; n [cg_kind="kernel", cg_id="0"]; } }',
    }[where]
    read(text.encode())


ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "latin-1",
             "cp1252", "cp437", "shift_jis", "euc-kr", "gb18030", "koi8-r", "mac-roman", "utf-7"]


@examples(100)
@given(st.sampled_from(ENCODINGS), st.sampled_from(SEEDS[:3] + SEEDS[-2:]), st.text(max_size=20))
def test_every_encoding(encoding, seed, extra):
    text = seed.decode("utf-8", errors="replace").replace("step", "step" + extra, 1)
    read(text.encode(encoding, errors="replace"))
    if codecs.lookup(encoding).name.startswith("utf-16"):
        read(codecs.BOM_UTF16_LE + text.encode("utf-16-le", errors="replace"))


@examples(12, shrink=False)
@given(st.data())
def test_end_to_end_through_the_cli(data):
    """A few mutated files through the real `cgtool dot` (summary, --json, -o): exit 0 or 2/3, no traceback."""
    seed = data.draw(st.sampled_from(SEEDS))
    path = os.path.join(_TMP, "cli.dot")
    with open(path, "wb") as fh:
        fh.write(data.draw(mutated(seed)))
    args = data.draw(st.sampled_from([[], ["--json"], ["-o", os.path.join(_TMP, "cli-out.dot")]]))
    r = subprocess.run([sys.executable, "-m", "cgtool", "dot", path, *args], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, NO_COLOR="1"))
    assert r.returncode in (0, 2, 3), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    if r.returncode:
        assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("name", DRIVER_DOTS[:6])
def test_the_seeds_themselves_read(name):
    assert read(fixture_bytes(name)[0]) is not None
