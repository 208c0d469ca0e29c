"""cgtool/graph/node_align.py: kernel names on both sides, matching by identity and order, replay times."""

from __future__ import annotations

from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.node_align import event_key, kernel_key, match, node_key, replay_times

# a real ATen symbol as cuFuncGetName gives it, and as torch.profiler's trace names the same kernel
MANGLED = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_")
PROFILER = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")


def test_driver_and_profiler_names_share_a_key() -> None:
    assert kernel_key(MANGLED) == kernel_key(PROFILER)
    assert kernel_key("triton_poi_fused_gelu_0") == "triton_poi_fused_gelu_0"


def test_copy_and_set_keys() -> None:
    assert event_key("Memcpy DtoD (Device -> Device)", "gpu_memcpy") == "memcpy DtoD"
    assert event_key("Memset (Device)", "gpu_memset") == "memset"
    assert node_key(GraphNode(0, "memcpy", name="memcpy DtoD", copy_kind="DtoD")) == "memcpy DtoD"
    assert node_key(GraphNode(0, "memset", name="memset")) == "memset"


def test_same_sequence_is_the_identity() -> None:
    assert match(list("abcab"), list("abcab")) == [0, 1, 2, 3, 4]


def test_reordered_branches_match_by_occurrence() -> None:
    # two streams' kernels interleaved differently in the replay than in creation order
    assert match(["a", "x", "b", "y"], ["a", "b", "x", "y"]) == [0, 2, 1, 3]


def test_extra_and_missing_kernels_leave_gaps() -> None:
    graph = ["gemm", "add", "gemm", "relu", "sum"]
    eager = ["fill", "gemm", "add", "gemm", "relu", "copy", "sum"]  # eager launches more than the graph holds
    assert match(graph, eager) == [1, 2, 3, 4, 6]
    assert match(["gemm", "new", "relu"], ["gemm", "relu"]) == [0, None, 1]


def test_a_kernel_the_lcs_skips_finds_its_twin_in_its_gap() -> None:
    # "b" and "c" swapped and one extra kernel on the eager side: LCS keeps one of b/c, the other pairs in the gap
    got = match(["a", "b", "c", "d"], ["a", "c", "b", "e", "d"])
    assert got[0] == 0 and got[3] == 4
    assert {got[1], got[2]} <= {1, 2, None} and sum(j is not None for j in got) >= 3


def test_replay_times_take_the_median_per_node() -> None:
    nodes = (GraphNode(0, "kernel", mangled="k1"), GraphNode(1, "empty"), GraphNode(2, "kernel", mangled="k2"),
             GraphNode(3, "memset", name="memset"))
    graph = Graph(nodes, ((0, 1), (1, 2), (2, 3)))
    replays = [[("k1", "kernel", 10.0), ("k2", "kernel", 5.0), ("Memset (Device)", "gpu_memset", 1.0)],
               [("k1", "kernel", 12.0), ("Memset (Device)", "gpu_memset", 1.0), ("k2", "kernel", 7.0)],
               [("k1", "kernel", 11.0), ("k2", "kernel", 6.0), ("Memset (Device)", "gpu_memset", 1.0),
                ("stray", "kernel", 3.0)]]
    t = replay_times(graph, replays)
    assert t.node_us == {0: 11.0, 2: 6.0, 3: 1.0}
    assert t.replays == 3 and t.unmatched_nodes == 0 and t.unmatched_events == 1
    assert t.replay_us == 20.0  # busy time per replay: 16, 20, 21 (the stray kernel counts: it ran)


def test_replay_events_group_kernels_by_their_graph_launch() -> None:
    from cgtool.capture.kernel_split import replay_events

    def launch(corr: int, ts: float) -> dict:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": ts, "dur": 5, "args": {"correlation": corr}}

    def kernel(name: str, corr: int, ts: float, cat: str = "kernel") -> dict:
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": 2.5, "args": {"correlation": corr}}

    trace = {"traceEvents": [launch(7, 0), launch(9, 100), kernel("b", 7, 20), kernel("a", 7, 10),
                             kernel("Memset (Device)", 9, 130, "gpu_memset"), kernel("c", 9, 120),
                             kernel("eager", 3, 50),  # launched one by one: no replay's
                             {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 40, "args": {"correlation": 3}}]}
    assert replay_events(trace) == [[("a", "kernel", 2.5), ("b", "kernel", 2.5)],
                                    [("c", "kernel", 2.5), ("Memset (Device)", "gpu_memset", 2.5)]]


def test_eager_events_name_the_outermost_op_that_launched_each_kernel() -> None:
    from cgtool.capture.kernel_split import eager_events

    def op(name: str, ts: float, dur: float, tid: int = 1) -> dict:
        return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "tid": tid}

    def call(corr: int, ts: float, tid: int = 1) -> dict:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 1, "tid": tid,
                "args": {"correlation": corr}}

    def kernel(name: str, corr: int, ts: float) -> dict:
        return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": 2.0, "args": {"correlation": corr}}

    trace = {"traceEvents": [
        op("aten::linear", 0, 30), op("aten::addmm", 5, 20),  # linear holds addmm: one op, 30 µs
        op("aten::relu", 40, 8), op("aten::clamp_min", 41, 6),
        op("autograd::engine::evaluate_function: AddmmBackward0", 42, 10, tid=2),  # another thread
        call(1, 10), call(2, 43), call(3, 45, tid=2), call(4, 60),
        kernel("gemm", 1, 100), kernel("relu", 2, 110), kernel("gemm_bw", 3, 120), kernel("stray", 4, 130)]}
    rows, cpu = eager_events(trace)
    assert cpu == [30, 8, 10]
    assert rows == [("gemm", "kernel", 2.0, 0), ("relu", "kernel", 2.0, 1), ("gemm_bw", "kernel", 2.0, 2),
                    ("stray", "kernel", 2.0, -1)]
