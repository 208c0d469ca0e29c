"""cgtool/graph/inductor_code.py on inductor's real output (tests/data/inductor/cpu_mlp.json: torch 2.13 on the
CPU compiling Linear-GELU-Linear-LayerNorm; the GPU's Triton output comes from tests/gpu/record_nodes.py)."""

from __future__ import annotations

import json
import os

from cgtool.graph.inductor_code import ATTENTION, EXTERN, Launch, launches, node_launches, stack_frames
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


def test_inductors_line_map_gives_each_launch_its_fx_nodes_stack() -> None:
    """tests/data/inductor/cpu_block.json: torch 2.13 on the CPU compiling a block whose forward is user code
    (fc -> gelu on line 9, out + x -> layer_norm on line 10), with PyCodeCache.linemaps of its module. The gelu
    kernel is launched after the next node's code starts (an input's size assert), and still gets gelu's stack."""
    with open(os.path.join(os.path.dirname(DATA), "cpu_block.json"), encoding="utf-8") as fh:
        d = json.load(fh)
    got = launches(d["code"], d["linemap"])
    assert [x.kernel for x in got] == ["extern:addmm", "cpp_fused_gelu_0", "extern:addmm",
                                       "cpp_fused_add_native_layer_norm_1"]
    assert [stack_frames(x.stack)[-1][1:] for x in got] == [(9, "forward"), (9, "forward"), (10, "forward"),
                                                            (10, "forward")]
    under = []  # the code each FX node was: its line's text under the stack's carets
    for x in got:
        code_line, carets = x.stack.splitlines()[-2:]
        under.append(code_line[carets.index("^"):carets.rindex("^") + 1])
    expect = ["self.fc(", "torch.nn.functional.gelu(", "self.out(", "torch.nn.functional.layer_norm("]
    assert all(u.startswith(e) for u, e in zip(under, expect)), under  # (where the carets end is dynamo's guess)
    assert launches(d["code"]) == [Launch(x.kernel, x.sources, x.aten, x.line) for x in got]  # no map: no stacks


def test_recorded_triton_code_maps_every_kernel_node_of_the_compiled_graph() -> None:
    """tests/data/nodes/no_cudagraphs.nodes.json.gz (H200, torch 2.11): samples/compiled/no_cudagraphs.py's
    graph, captured by cgtool from torch.compile(Linear-GELU-Linear-LayerNorm), and the generated code's lines.
    All 6 kernel nodes find their launch: cuBLAS's GEMM and split-K kernels by order, Triton's by name."""
    import gzip

    with gzip.open(os.path.join(os.path.dirname(os.path.dirname(DATA)), "nodes", "no_cudagraphs.nodes.json.gz"),
                   "rt") as fh:
        fx = json.load(fh)
    graph = Graph.from_json(fx["graph"])
    code = "\n".join(line for m in fx["inductor"]["modules"] for line in m["lines"])
    got = node_launches(graph, launches(code))
    assert sorted(got) == [n.id for n in graph.kernels] == list(range(6))
    assert [got[i].kernel for i in range(6)] == ["extern:mm", "extern:mm", "triton_poi_fused_addmm_gelu_0",
                                                 "extern:addmm", "extern:addmm", "triton_per_fused_native_layer_norm_1"]
    assert got[5].sources == ("input_4",) and got[2].aten == ("aten.addmm", "aten.gelu")


def test_compiled_graph_nodes_get_the_lines_of_their_fx_nodes() -> None:
    """cpu_block.json's launches as a GPU graph would hold them (a GEMM per extern call, the generated kernels
    by name): each kernel node gets the user's line of its FX node; a kernel of no launch is counted unmapped."""
    from cgtool.graph.node_align import ReplayTimes
    from cgtool.model.node_profile import INDUCTOR, NO_LAUNCH, launch_profile
    from cgtool.pipeline.compiled_lines import launch_source

    with open(os.path.join(os.path.dirname(DATA), "cpu_block.json"), encoding="utf-8") as fh:
        d = json.load(fh)
    names = ["sm90_gemm", "cpp_fused_gelu_0", "sm90_gemm", "cpp_fused_add_native_layer_norm_1", "stray_copy"]
    graph = Graph(tuple(GraphNode(i, "kernel", name=n, mangled=n) for i, n in enumerate(names)),
                  tuple((i, i + 1) for i in range(4)))
    found = node_launches(graph, launches(d["code"], d["linemap"]))
    assert sorted(found) == [0, 1, 2, 3]
    times = ReplayTimes({i: 10.0 * (i + 1) for i in range(5)}, 5, 150.0, 0, 0)
    p = launch_profile(graph, {n: launch_source(x) for n, x in found.items()}, times)
    assert (p.kernels, p.kernels_mapped, p.unmapped) == (5, 4, {NO_LAUNCH: 1})
    assert [(p.frames[n.frame].line, n.how) for n in p.nodes[:4]] == [(9, INDUCTOR)] * 2 + [(10, INDUCTOR)] * 2
    assert p.nodes[0].op == "linear: aten.t, aten.addmm"
    assert [(r.key.rsplit("/", 1)[-1], r.nodes, r.us) for r in p.totals("line")] == [("blk.py:10", 2, 70.0),
                                                                                     ("blk.py:9", 2, 30.0)]


def test_line_map_with_a_fallback_op_and_a_multi_output_pick() -> None:
    """tests/data/inductor/cpu_attention_block.json: tests/gpu/scripts/compiled_block.py compiled by torch 2.13 on
    the CPU. Attention stays an aten op (`buf5 = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu...`,
    a launch of a library kernel) and its output is picked (`buf6 = buf5[0]`: a line-map entry, no launch).
    Each of the 9 launches gets the stack of its own FX node (what the carets mark)."""
    with open(os.path.join(os.path.dirname(DATA), "cpu_attention_block.json"), encoding="utf-8") as fh:
        d = json.load(fh)
    got = launches(d["code"], d["linemap"])
    assert got[2].kernel == "extern:aten._scaled_dot_product_flash_attention_for_cpu" and got[2].key == ATTENTION
    under = []
    for x in got:
        code_line, carets = x.stack.splitlines()[-2:]
        under.append(code_line[carets.index("^"):])
    expect = ["self.norm1(", "self.qkv(", "F.scaled_dot_product_attention(", "self.proj(", "self.norm2(",
              "self.up(", "F.gelu(", "self.down(", "x + self.down("]  # the fused residual add + norm2: norm2's
    assert len(got) == len(expect) and all(u.startswith(e) for u, e in zip(under, expect)), under
    assert [stack_frames(x.stack)[-1][1] for x in got] == [20, 20, 21, 22, 23, 23, 23, 23, 23]

    # as a GPU graph would hold them: the QKV GEMM split in two kernels (split-K), then the attention kernel
    names = ["cpp_fused_native_layer_norm_0", "sm90_gemm", "splitKreduce_kernel",
             "fmha_cutlassF_f32_aligned_64x64_rf_sm80", "sm90_gemm", "cpp_fused_add_native_layer_norm_view_1",
             "sm90_gemm", "cpp_fused_gelu_view_2", "sm90_gemm", "cpp_fused_add_view_3"]
    graph = Graph(tuple(GraphNode(i, "kernel", name=n, mangled=n) for i, n in enumerate(names)),
                  tuple((i, i + 1) for i in range(len(names) - 1)))
    by_node = node_launches(graph, got)
    assert [stack_frames(by_node[i].stack)[-1][1] for i in range(len(names))] == [20, 20, 20, 21, 22, 23, 23, 23,
                                                                                 23, 23]
    assert by_node[3] is got[2] and by_node[4] is got[3]
