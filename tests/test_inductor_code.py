"""cgtool/graph/inductor_code.py on inductor's real output (tests/data/inductor/cpu_mlp.json: torch 2.13 on the
CPU compiling Linear-GELU-Linear-LayerNorm; the GPU's Triton output comes from tests/gpu/record_nodes.py)."""

from __future__ import annotations

import json
import os

from cgtool.graph.inductor_code import EXTERN, Launch, launches, node_launches, stack_frames
from cgtool.graph.model import Graph, GraphNode

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "inductor", "cpu_mlp.json")


def recorded() -> dict:
    with open(DATA, encoding="utf-8") as fh:
        return json.load(fh)


def test_launches_in_call_order_with_their_source_nodes() -> None:
    got = launches(recorded()["code"])
    assert [x.kernel for x in got] == ["extern:addmm", "cpp_fused_gelu_0", "extern:addmm",
                                       "cpp_fused_native_layer_norm_1"]
    assert got[0].sources == ("input_1",) and got[0].aten == ("aten.t", "aten.addmm")
    assert got[2].sources == ("input_2", "input_3")
    assert [x.key for x in got][::2] == [EXTERN, EXTERN]


def test_fx_nodes_stack_names_the_users_line() -> None:
    fx = {name: stack for name, _op, _target, stack in recorded()["fx_nodes"]}
    assert stack_frames(fx["input_1"]) == [("/tmp/issue22-ind/mlp_step.py", 11, "step")]
    assert stack_frames(None) == []


def test_library_kernels_match_between_generated_ones() -> None:
    found = [Launch("extern:mm", ("linear",)), Launch("triton_poi_fused_gelu_0", ("gelu",)),
             Launch("extern:mm", ("linear_1",))]
    graph = Graph((GraphNode(0, "kernel", name="sm90_gemm", mangled="sm90_gemm"),
                   GraphNode(1, "kernel", name="splitKreduce_kernel", mangled="splitKreduce_kernel"),
                   GraphNode(2, "kernel", name="triton_poi_fused_gelu_0", mangled="triton_poi_fused_gelu_0"),
                   GraphNode(3, "kernel", name="sm90_gemm", mangled="sm90_gemm")), ((0, 1), (1, 2), (2, 3)))
    got = node_launches(graph, found)
    assert [got[i].sources for i in range(4)] == [("linear",), ("linear",), ("gelu",), ("linear_1",)]
