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


def test_a_gap_of_several_lines_gives_no_eager_time() -> None:
    """Eager kernels that match no node between nodes of two lines belong to neither: both lines have no eager
    time, so neither is called slower."""
    eager = [("other_a", "kernel", 5.0, 0), ("other_b", "kernel", 5.0, 1), ("gemm", "kernel", 30.0, 2)]
    graph_times = profile(199.0, norm_us=80.0)
    assert slower_lines(graph_times, GRAPH, eager) == []


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
