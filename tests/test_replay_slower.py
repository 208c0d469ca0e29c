"""cgtool/model/replay_slower.py: lines whose replay GPU time exceeds eager's, with the kernels each side ran;
JSON, and the console table (no torch)."""

from __future__ import annotations

from rich.console import Console

from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.node_align import replay_times
from cgtool.model.frame import Frame
from cgtool.model.node_profile import NodeProfile, node_profile
from cgtool.model.replay_slower import OTHER_KERNELS, SAME_KERNELS, SlowerLine, slower_lines
from cgtool.model.trace import ATEN, OpRecord
from cgtool.render.node_lines import slower_causes, slower_table

FRAMES = [Frame("step.py", 10, "step", "h = self.conv(x)"), Frame("step.py", 11, "step", "h = self.norm(h)"),
          Frame("step.py", 12, "step", "return self.proj(h)")]
# the conv line captured as an implicit-GEMM kernel; eager runs an FFT conv (two kernels) there
GRAPH = Graph((GraphNode(0, "kernel", mangled="implicit_gemm_conv"), GraphNode(1, "kernel", mangled="layer_norm"),
               GraphNode(2, "kernel", mangled="gemm")), ((0, 1), (1, 2)))
OPS = [OpRecord(ATEN, "aten.convolution", frame=0, node=0), OpRecord(ATEN, "aten.layer_norm", frame=1, node=1),
       OpRecord(ATEN, "aten.addmm", frame=2, node=2)]
ROWS = [(0, "aten.convolution.default", 0, 1, ""), (1, "aten.layer_norm.default", 1, 2, ""),
        (2, "aten.addmm.default", 2, 3, "")]


def profile(conv_us: float, norm_us: float = 20.0) -> NodeProfile:
    times = replay_times(GRAPH, [[("implicit_gemm_conv", "kernel", conv_us), ("layer_norm", "kernel", norm_us),
                                  ("gemm", "kernel", 30.0)]] * 5)
    return node_profile(GRAPH, FRAMES, OPS, ROWS, times)


def test_a_line_running_other_kernels_in_replay_is_named_with_both_sides() -> None:
    eager = [("fft_pre", "kernel", 40.0, 0), ("fft_conv", "kernel", 45.0, 0), ("layer_norm", "kernel", 21.0, 1),
             ("gemm", "kernel", 29.0, 2)]
    p = profile(199.0)
    rows = slower_lines(p, GRAPH, eager)
    assert [(r.frame, r.eager_us, r.replay_us) for r in rows] == [(0, 85.0, 199.0)]
    assert rows[0].cause == OTHER_KERNELS
    assert rows[0].eager_kernels == ("fft_pre", "fft_conv") and rows[0].replay_kernels == ("implicit_gemm_conv",)
    assert "other kernels" in rows[0].explain() and "fft_conv" in rows[0].explain()


def test_same_kernels_slower_beyond_noise_only() -> None:
    eager = [("implicit_gemm_conv", "kernel", 50.0, 0), ("layer_norm", "kernel", 20.0, 1), ("gemm", "kernel", 30.0, 2)]
    assert slower_lines(profile(60.0), GRAPH, eager) == []  # 1.2x: within noise
    assert slower_lines(profile(50.0, norm_us=27.0), GRAPH, eager) == []  # 1.35x but 7 µs: within noise
    rows = slower_lines(profile(80.0), GRAPH, eager)
    assert [r.frame for r in rows] == [0] and rows[0].cause == SAME_KERNELS
    assert slower_lines(profile(50.0), GRAPH, eager) == []


def test_a_stretch_of_other_kernels_over_several_lines_counts_for_the_line_of_most_replay_time() -> None:
    """Eager kernels that match no node between nodes of two lines: the whole stretch (both sides) counts for the
    line with most replay time in it, which names the other line; the lines' matched kernels count as before."""
    eager = [("other_a", "kernel", 5.0, 0), ("other_b", "kernel", 5.0, 1), ("gemm", "kernel", 30.0, 2)]
    rows = slower_lines(profile(199.0, norm_us=80.0), GRAPH, eager)
    assert [(r.frame, r.eager_us, r.replay_us, r.spans) for r in rows] == [(0, 10.0, 279.0, (1,))]
    assert rows[0].eager_kernels == ("other_a", "other_b")
    assert rows[0].replay_kernels == ("implicit_gemm_conv", "layer_norm")
    p = profile(199.0, norm_us=80.0)
    p.slower = rows
    assert "also holds step.py:11" in slower_causes(p)[0]


def test_eager_kernels_beside_no_node_count_for_the_line_before() -> None:
    """Eager kernels between two matched pairs with no node between them count for the matched node's line before
    them: the conv line ran its work in two kernels eagerly and one in replay, not slower (seen on wav2vec2's
    convolutions on an H200, which the replay-only nodes of a later stretch otherwise made look 4x slower)."""
    eager = [("implicit_gemm_conv", "kernel", 50.0, 0), ("extra", "kernel", 40.0, 0), ("layer_norm", "kernel", 20.0, 1),
             ("gemm", "kernel", 30.0, 2)]
    assert slower_lines(profile(80.0), GRAPH, eager) == []
    assert slower_lines(profile(200.0), GRAPH, eager)[0].eager_us == 90.0


def test_the_launch_bound_table_counts_the_same_stretches_as_the_slower_lines() -> None:
    """The launch-bound table's eager and replay GPU columns come from the same attribution: eager kernels that
    match no node count for their line (the conv line ran two kernels eagerly and one in replay). Before, its eager
    column left them out while its replay column kept every node, so on wav2vec2 (H200) the conv line read 1.04 ms
    eager against 4.07 ms replay in one table while the slower-lines table rightly listed only attention."""
    from cgtool.model.node_profile import eager_lines

    eager = [("implicit_gemm_conv", "kernel", 50.0, 0), ("extra", "kernel", 40.0, 0), ("layer_norm", "kernel", 20.0, 1),
             ("gemm", "kernel", 30.0, 2)]
    p = profile(80.0)
    rows = {r.frame: r for r in eager_lines(p, GRAPH, eager, [1000.0, 1000.0, 1000.0])}
    assert (rows[0].gpu_us, rows[0].replay_us) == (90.0, 80.0)  # both sides of the conv line's stretch
    assert (rows[1].gpu_us, rows[2].gpu_us) == (20.0, 30.0)
    assert [r.frame for r in eager_lines(p, GRAPH, eager, [60.0, 1000.0, 1000.0])] == [1, 2]  # 60 µs CPU < 90 µs GPU


def test_json_and_console() -> None:
    eager = [("fft_conv", "kernel", 85.0, 0), ("layer_norm", "kernel", 20.0, 1), ("gemm", "kernel", 30.0, 2)]
    p = profile(199.0)
    p.slower = slower_lines(p, GRAPH, eager)
    back = NodeProfile.from_json(p.to_json())
    assert back.slower == p.slower and p.to_json()["replay_slower_lines"][0]["cause"] == OTHER_KERNELS
    assert NodeProfile.from_json({k: v for k, v in p.to_json().items() if k != "replay_slower_lines"}).slower == []
    console = Console(width=200, record=True)
    console.print(slower_table(p))
    text = console.export_text()
    assert "step.py:10" in text and "85 µs" in text and "2.34×" in text and OTHER_KERNELS in text
    assert slower_causes(p)[0].startswith("step.py:10: replay runs other kernels (implicit_gemm_conv)")
    assert SlowerLine.from_json(p.slower[0].to_json()) == p.slower[0]


def recorded(name: str):
    """(profile, graph, eager kernels) of a fixture recorded on an H100 (tests/gpu/record_nodes.py)."""
    import gzip
    import json
    import os

    from cgtool.model.node_profile import rows_from_ops

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "nodes", f"{name}.nodes.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        fx = json.load(fh)
    graph = Graph.from_json(fx["graph"])
    frames = [Frame.from_json(f) for f in fx["trace"]["frames"]]
    ops = [OpRecord.from_json(o) for o in fx["trace"]["ops"]]
    replays = [[(e[0], e[1], float(e[2])) for e in r] for r in fx["replays"]]
    p = node_profile(graph, frames, ops, rows_from_ops(ops, len(graph.nodes)), replay_times(graph, replays))
    return p, graph, [tuple(k) for k in fx["eager"]["kernels"]]


def test_recorded_llama_mask_is_built_only_under_capture() -> None:
    """hf_llama_infer and hf_gpt2_train recorded on an H100: transformers' masking_utils.py:189 runs other kernels
    while capturing (it builds the mask with arange and compares) than eagerly (a check, compare and reduce), and
    more GPU time; the MLP, ResNet and BERT recordings run the same kernels and list no line."""
    for name in ("hf_llama_infer", "hf_gpt2_train"):
        p, graph, kernels = recorded(name)
        rows = slower_lines(p, graph, kernels)
        assert [p.where(r.frame).rsplit("/", 1)[-1] for r in rows] == ["masking_utils.py:189"], name
        assert rows[0].cause == OTHER_KERNELS and any("arange" in k for k in rows[0].replay_kernels)
    for name in ("mlp_inference", "tv_resnet18_infer", "hf_bert_padded_infer"):
        p, graph, kernels = recorded(name)
        assert slower_lines(p, graph, kernels) == [], name
