"""cgtool/model/node_profile.py: nodes to the ops and lines that made them, totals, JSON."""

from __future__ import annotations

from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.node_align import replay_times
from cgtool.model.frame import Frame
from cgtool.model.node_profile import CAPTURE, OUTSIDE_OPS, UNTRACED_OP, NodeProfile, node_profile, rows_from_ops
from cgtool.model.trace import ATEN, CALL, OpRecord

FRAMES = [Frame("step.py", 10, "step", "h = model(x)"), Frame("lib/mlp.py", 5, "forward", "return self.fc(x)"),
          Frame("step.py", 11, "step", "return h.relu()")]
GRAPH = Graph((GraphNode(0, "kernel", mangled="gemm"), GraphNode(1, "kernel", mangled="bias"),
               GraphNode(2, "memset", name="memset"), GraphNode(3, "kernel", mangled="relu"),
               GraphNode(4, "kernel", mangled="stray")), ((0, 1), (1, 2), (2, 3), (3, 4)))
OPS = [OpRecord(CALL, "Tensor.relu", frame=2),
       OpRecord(ATEN, "aten.addmm", frame=0, lib=1, node=0),
       OpRecord(ATEN, "aten.zero_", frame=0, lib=1, node=2),
       OpRecord(ATEN, "aten.relu", frame=2, node=3)]


def test_rows_from_ops_give_each_op_the_nodes_made_until_the_next() -> None:
    assert rows_from_ops(OPS, 5) == [(1, "aten.addmm", 0, 2, ""), (2, "aten.zero_", 2, 3, ""), (3, "aten.relu", 3, 5, "")]


def test_profile_maps_nodes_to_lines_and_sums_time() -> None:
    rows = [(1, "aten.addmm.default", 0, 2, "model.fc"), (2, "aten.zero_.default", 2, 3, "model.fc"),
            (3, "aten.relu.default", 3, 4, "")]
    times = replay_times(GRAPH, [[("gemm", "kernel", 30.0), ("bias", "kernel", 5.0), ("Memset (Device)", "gpu_memset", 1.0),
                                  ("relu", "kernel", 4.0), ("stray", "kernel", 2.0)]] * 3)
    p = node_profile(GRAPH, FRAMES, OPS, rows, times)
    assert [n.how for n in p.nodes] == [CAPTURE] * 4 + ["not mapped"]
    assert p.unmapped == {OUTSIDE_OPS: 1}
    assert (p.kernels, p.kernels_mapped) == (4, 3)
    lines = p.totals("line")
    assert [(r.key, r.nodes, r.us) for r in lines] == [("step.py:10", 3, 36.0), ("step.py:11", 1, 4.0)]
    assert p.totals("source")[0].key == "lib/mlp.py:5"
    assert [(r.key, r.us) for r in p.totals("module")] == [("model.fc", 36.0), ("", 6.0)]
    assert abs(sum(r.share for r in p.totals("module")) - 1.0) < 1e-9
    back = NodeProfile.from_json(p.to_json())
    assert back.to_json() == p.to_json()


def test_an_op_the_tracer_skipped_leaves_its_nodes_unmapped() -> None:
    rows = [(1, "aten.addmm.default", 0, 2, ""), (1, "aten.fill_.Scalar", 2, 3, "")]  # fill_ was not recorded
    p = node_profile(GRAPH, FRAMES, OPS, rows)
    assert p.unmapped == {UNTRACED_OP: 1, OUTSIDE_OPS: 2}
    assert all(n.us is None for n in p.nodes)
