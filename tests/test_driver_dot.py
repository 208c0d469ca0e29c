"""Reading real driver DOT dumps (torch's debug_dump; every node kind at flags 0, verbose and all)."""

import os
from pathlib import Path

import pytest

from cgtool.graph.driver_dot import read_driver_dot
from cgtool.graph.record_label import parse_record, record_fields, unescape

DATA = Path(os.path.dirname(__file__)) / "data"
GEMM = "gemmSN_TN_kernel<cublasGemvTensorStridedBatched>"
CLAMP = "vectorized_elementwise_kernel<launch_clamp_scalar>"


def test_mlp20_every_node():
    g = read_driver_dot(DATA / "mlp20_inference.dot")
    assert g.source == "driver-dot"
    assert len(g.nodes) == 40 and g.edges == tuple((i, i + 1) for i in range(39))
    for n in g.nodes:
        assert n.kind == "kernel" and n.graph == 0 and n.attrs == {"topo_id": 39 - n.id}
        if n.id % 2 == 0:
            assert (n.name, n.grid, n.block, n.shared_mem) == (GEMM, (32, 1, 1), (128, 1, 1), 0)
            assert n.mangled.startswith("_Z16gemmSN_TN_kernelIfLi128E")
            assert n.demangled.startswith("void gemmSN_TN_kernel<float, 128, 16")
        else:
            assert (n.name, n.grid, n.block, n.shared_mem) == (CLAMP, (2, 1, 1), (128, 1, 1), 0)


def test_multistream_memcpy():
    g = read_driver_dot(DATA / "multistream_memcpy.dot")
    assert [n.kind for n in g.nodes] == ["kernel", "kernel", "memcpy", "kernel", "kernel", "kernel"]
    assert g.edges == ((0, 3), (1, 2), (2, 3), (3, 4), (4, 5))
    gemm, copy = g.nodes[0], g.nodes[2]
    assert gemm.grid == (8, 16, 1) and gemm.block == (128, 1, 1) and gemm.shared_mem == 18816
    assert gemm.mangled.startswith("sm80_xmma_gemm_f32f32") and gemm.demangled == gemm.mangled
    assert (copy.name, copy.copy_kind, copy.bytes) == ("memcpy HtoD", "HtoD", 4096)
    assert g.nodes[3].name == "vectorized_elementwise_kernel<FillFunctor>"


KINDS = ["memset", "memcpy", "kernel", "memcpy", "memcpy", "mem_alloc", "memset", "mem_free", "event_record",
         "event_wait", "host", "graph", "empty", "conditional", "conditional", "memset", "empty", "memset", "memset"]


@pytest.mark.parametrize("name", ["kinds_flags0.dot", "kinds_verbose.dot", "kinds_all.dot"])
def test_every_kind_with_any_flags(name):
    g = read_driver_dot(DATA / name)
    assert [n.kind for n in g.nodes] == KINDS
    assert [n.graph for n in g.nodes] == [0] * 15 + [1, 1, 2, 3]
    assert g.edges == tuple((i, i + 1) for i in range(10)) + ((15, 16),)
    copies = [(n.copy_kind, n.bytes) for n in g.nodes if n.kind == "memcpy"]
    assert copies == [("HtoD", 262144), ("DtoD", 262144), ("DtoH", 262144)]
    assert [n.bytes for n in g.nodes if n.kind == "memset"] == [262144, 4096, 1024, 256, 256]
    assert [n.attrs["value"] for n in g.nodes if n.kind == "memset"] == [0, 1, 0, 0, 0]
    child, cond_if, cond_while = g.nodes[11], g.nodes[13], g.nodes[14]
    assert (child.child, cond_if.child, cond_while.child) == (1, 2, 3)
    assert (cond_if.name, cond_while.name) == ("conditional IF", "conditional WHILE")
    kernel = g.nodes[2]
    assert kernel.name == "vectorized_elementwise_kernel<MulFunctor>"
    if name == "kinds_flags0.dot":  # flags=0: no launch dims, no alloc size, no topo ids
        assert kernel.grid is None and g.nodes[5].bytes is None and "topo_id" not in kernel.attrs
    else:
        assert (kernel.grid, kernel.block, kernel.shared_mem) == ((64, 1, 1), (128, 1, 1), 0)
        assert g.nodes[5].bytes == 4096 and kernel.attrs["topo_id"] == 12
        assert g.nodes[8].attrs["event"] == g.nodes[9].attrs["event"] == "0x0000000044945E40"


def test_if_else_bodies_unknown_type_and_edge_chain():
    g = read_driver_dot(DATA / "if_else_unknown.dot")
    copy, cond, future, empty, body_true, body_false = g.nodes
    assert (copy.copy_kind, copy.bytes) == ("DtoH", 2048)
    assert cond.kind == "conditional" and cond.child == 1 and cond.attrs["bodies"] == [1, 2]
    assert future.kind == "unknown" and future.attrs["driver_type"] == "FUTURE_NODE_TYPE"
    assert empty.kind == "empty"
    assert (body_true.graph, body_true.kind, body_true.bytes) == (1, "memset", 512)
    assert (body_false.graph, body_false.kind, body_false.name) == (2, "kernel", "vectorized_elementwise_kernel<FillFunctor>")
    assert g.edges == ((0, 1), (1, 3), (2, 3))


def test_text_and_path_give_the_same_graph():
    path = DATA / "multistream_memcpy.dot"
    assert read_driver_dot(path.read_text()) == read_driver_dot(path)


def test_record_tables():
    label = ("{\nMEMCPY\n| {{ID | node handle} | {2 (topoId: 4) | 0x1}}\n| {kind | HtoD (HOST PINNED to DEVICE)}\n"
             "| {{srcPtr | dstPtr} | {pitch | ptr | pitch | ptr} | {0 | 0xA | 0 | 0xB}}\n"
             "| {{srcPos | {{x | 0} | {y | 0} | {z | 0}}} | {Extent | {{Width | 4096} | {Height | 1} | {Depth | 1}}}}\n"
             "| {{{poolProps | {allocType | {location | {type | id}}} | {PINNED | DEVICE | 0}}}}\n}")
    tree = parse_record(label)
    assert tree[0] == "MEMCPY"
    assert record_fields(tree[1:]) == {
        "ID": "2 (topoId: 4)", "node handle": "0x1", "kind": "HtoD (HOST PINNED to DEVICE)",
        "srcPtr.pitch": "0", "srcPtr.ptr": "0xA", "dstPtr.pitch": "0", "dstPtr.ptr": "0xB",
        "srcPos.x": "0", "srcPos.y": "0", "srcPos.z": "0",
        "Extent.Width": "4096", "Extent.Height": "1", "Extent.Depth": "1",
        "poolProps.allocType": "PINNED", "poolProps.location.type": "DEVICE", "poolProps.location.id": "0",
    }


def test_record_escapes_ports_and_unbalanced_braces():
    assert parse_record(r"{KERNEL | {ID | 0 | k\<\<\<\{8,16\},128,0\>\>\>}}") == ["KERNEL", ["ID", "0", "k<<<{8,16},128,0>>>"]]
    assert parse_record("{<p0> a | <p1> b}") == ["a", "b"]
    assert parse_record("{A | {b | c}") == ["A", ["b", "c"]]  # cut label: closed at the end
    assert parse_record("a } | b") == ["a", "b"]  # a stray brace is ignored
    assert unescape(r"x\<y\ny") == "x<y\ny"
