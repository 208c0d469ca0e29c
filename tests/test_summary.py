"""Summaries of the driver fixtures (exact), and repeated-run detection on hand-built graphs."""

import os
from pathlib import Path

from cgtool.graph.driver_dot import read_driver_dot
from cgtool.graph.folding import find_repeats
from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.summary import summarize

DATA = Path(os.path.dirname(__file__)) / "data"


def test_mlp20_summary_exact():
    s = summarize(read_driver_dot(DATA / "mlp20_inference.dot")).to_json()
    assert s == {
        "source": "driver-dot", "nodes": 40, "edges": 39, "by_kind": {"kernel": 40}, "graphs": 1,
        "depth": 40, "width": 1, "roots": 1, "leaves": 1,
        "kernels": [
            {"name": "gemmSN_TN_kernel<cublasGemvTensorStridedBatched>", "count": 20,
             "launches": {"<<<32,128,0>>>": 20}, "demangled": s["kernels"][0]["demangled"]},
            {"name": "vectorized_elementwise_kernel<launch_clamp_scalar>", "count": 20,
             "launches": {"<<<2,128,0>>>": 20}, "demangled": s["kernels"][1]["demangled"]},
        ],
        "copies": [],
        "repeats": [{"graph": 0, "count": 20, "period": 2, "nodes": 40, "first_node": 0, "kinds": ["kernel", "kernel"],
                     "block": ["gemmSN_TN_kernel<cublasGemvTensorStridedBatched>",
                               "vectorized_elementwise_kernel<launch_clamp_scalar>"]}],
    }
    assert s["kernels"][1]["demangled"].startswith("void at::native::vectorized_elementwise_kernel<4, ")


def test_multistream_summary_exact():
    s = summarize(read_driver_dot(DATA / "multistream_memcpy.dot"))
    assert (s.nodes, s.edges, s.depth, s.width, s.roots, s.leaves) == (6, 5, 5, 2, 2, 1)
    assert s.counts["by_kind"] == {"kernel": 5, "memcpy": 1}
    assert [(k.name, k.count, k.launches) for k in s.kernels] == [
        ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_stag…", 2, (("<<<{8,16,1},128,18816>>>", 2),)),
        ("vectorized_elementwise_kernel<CUDAFunctor_add>", 2, (("<<<1024,128,0>>>", 2),)),
        ("vectorized_elementwise_kernel<FillFunctor>", 1, (("<<<1024,128,0>>>", 1),)),
    ]
    assert [c.to_json() for c in s.copies] == [{"kind": "memcpy", "direction": "HtoD", "count": 1, "bytes": 4096}]
    assert s.repeats == ()


def test_kinds_summary_copies_and_unknown_sizes():
    s = summarize(read_driver_dot(DATA / "kinds_verbose.dot"))
    assert s.counts["graphs"] == 4 and (s.depth, s.width, s.roots, s.leaves) == (11, 5, 5, 5)
    assert [(c.kind, c.direction, c.count, c.bytes) for c in s.copies] == [
        ("memcpy", "DtoD", 1, 262144), ("memcpy", "DtoH", 1, 262144), ("memcpy", "HtoD", 1, 262144),
        ("memset", "", 5, 262144 + 4096 + 1024 + 256 + 256)]
    flags0 = summarize(read_driver_dot(DATA / "kinds_flags0.dot"))
    assert flags0.kernels[0].launches == (("unknown", 1),)


def chain(names: list[str], extra_edges: tuple = ()) -> Graph:
    nodes = tuple(GraphNode(id=i, kind="kernel", name=n) for i, n in enumerate(names))
    return Graph(nodes, tuple((i, i + 1) for i in range(len(names) - 1)) + tuple(extra_edges))


def runs(graph: Graph) -> list[tuple[int, int, int]]:
    return [(r.members[0], r.period, r.count) for r in find_repeats(graph)]


def test_repeat_after_a_prefix_and_before_a_suffix():
    g = chain(["embed"] + ["mm", "add", "relu"] * 1000 + ["softmax"])
    assert runs(g) == [(1, 3, 1000)]
    s = summarize(g)
    assert (s.repeats[0].count, s.repeats[0].block, s.repeats[0].nodes) == (1000, ("mm", "add", "relu"), 3000)


def test_too_few_copies_and_no_repeats():
    assert runs(chain(["a", "b", "a", "b"])) == []
    assert runs(chain(["a", "b", "c", "d", "e"])) == []
    assert runs(chain(["x"] * 5)) == [(0, 1, 5)]


def test_an_edge_that_skips_copies_splits_the_run():
    # A residual edge from copy 2 into copy 6: copy 2 may not lead on, copy 6 may not be entered from
    # outside, so the 12 copies split into exact runs 0-2, 3-5 and 6-11.
    g = chain(["a", "b"] * 12, extra_edges=((5, 13),))
    assert runs(g) == [(0, 2, 3), (6, 2, 3), (12, 2, 6)]


def test_parallel_copies_are_not_a_chain():
    nodes = tuple(GraphNode(id=i, kind="kernel", name="k") for i in range(6))
    g = Graph(nodes, ((0, 1), (2, 3), (4, 5)))  # three independent pairs: not linked copy to copy
    assert runs(g) == []


def test_child_graph_nodes_never_fold_and_graphs_are_separate():
    nodes = [GraphNode(id=i, kind="graph", name="child graph", child=i + 1) for i in range(4)]
    nodes += [GraphNode(id=4 + i, kind="memset", name="memset", graph=1, bytes=8) for i in range(4)]
    g = Graph(tuple(nodes), ((0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 7)))
    assert [(r.graph, r.members) for r in find_repeats(g)] == [(1, (4, 5, 6, 7))]


def test_different_launch_dims_are_different_steps():
    nodes = tuple(GraphNode(id=i, kind="kernel", name="k", grid=(1 + i % 2, 1, 1), block=(32, 1, 1))
                  for i in range(6))
    g = Graph(nodes, tuple((i, i + 1) for i in range(5)))
    assert runs(g) == [(0, 2, 3)]
