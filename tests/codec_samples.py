"""Representative records of every kind cgtool writes as JSON, built through their constructors: the golden files in
tests/data/codec/ are these records' JSON as the hand-written to_json methods wrote it (before the codec), and
tests/test_codec.py checks the codec writes the same bytes and reads them back."""

from __future__ import annotations

import math
import random
from typing import Any

from cgtool.bench.adaptive import CONVERGED, AdaptiveResult, RoundStatus
from cgtool.bench.compare import compare
from cgtool.bench.cpu_load import CpuLoad
from cgtool.bench.estimate import Estimate
from cgtool.bench.result import BenchReport, BenchResult
from cgtool.graph.model import Graph, GraphNode
from cgtool.model.compiled import CompiledEvent, CompiledRun, CompileSite, GraphBreak, TreeFunction, TreeGraph
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.graph_memory import GraphMemory, SharedPool
from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.node_profile import EagerLine, NodeProfile, NodeSource
from cgtool.model.partial import CallSpec, ModuleEntry, ModuleMap, Piece, Piecewise, SplitPoint
from cgtool.model.ranks import Collective, DdpWrap, DistReport, RankResult
from cgtool.model.report import ErrorRecord, ReplayCheck, Report, Skip, TensorDiff, Timings
from cgtool.model.timeline import Slice, Timeline
from cgtool.model.trace import Iteration, OpRecord, Rebind, StreamEvent, Trace

FRAME = Frame("train.py", 12, "step", "loss = model(x).sum()")


def graph() -> Graph:
    nodes = (GraphNode(0, "kernel", name="gemm", mangled="_Z4gemm", demangled="gemm", grid=(4, 1, 1), block=(128, 1, 1),
                       shared_mem=0, attrs={"func": "0x1"}),
             GraphNode(1, "memcpy", name="memcpy DtoD", copy_kind="DtoD", bytes=4096),
             GraphNode(2, "graph", child=1), GraphNode(3, "kernel", graph=1, name="relu"))
    return Graph(nodes, ((0, 1), (1, 2)), "cuda")


def findings() -> list[Finding]:
    return [Finding("CG101", "sync", "error", "`.item()` syncs", "train.py", 12, "x.item()", "keep it on device", "step",
                    "confirmed", None, "item", "cpu-trace", "capture-fails", "the capture failed here"),
            Finding("CG201", "rng", "warning", "rng in step")]


def replay() -> ReplayCheck:
    return ReplayCheck("mismatch", "inputs(4)..inputs(9)", (TensorDiff("output[0]", (2, 3), "float32", 0.5, 0.25, False, 1e-7),
                                                           TensorDiff("state.w", (), "bfloat16", 0.0, 0.0, True)),
                       "note", 3, 2, ("state.pos",))


def error() -> ErrorRecord:
    return ErrorRecord("capture", "RuntimeError", "operation not permitted", (FRAME, Frame("lib.py", 3, "f")),
                       "cudaErrorStreamCaptureUnsupported", ("train.py:10", "train.py:11"))


def timeline() -> Timeline:
    return Timeline([Slice("replay", "gemm", "kernel", 0.0, 1.23456, 7, 0, 1), Slice("eager", "aten::mm", "cpu_op", 0.5, 2.0),
                     Slice("replay", "gemm", "kernel", 3.0, 1.0, 7, 0, 2)])


def node_profile(with_timeline: bool = True) -> NodeProfile:
    return NodeProfile([FRAME], [NodeSource(0, "aten::mm", 0, -1, "model.fc", "capture", 1.23456), NodeSource(1)],
                       {"no stack": 2}, 5, 12.34567, 1, 4, 3, [EagerLine(0, 10.12345, 2.5, 1.0)],
                       timeline() if with_timeline else None)


def compiled() -> CompiledRun:
    return CompiledRun("torch.compile reduce-overhead (CUDAGraph Trees)",
                       [CompileSite("train.py", 3, "reduce-overhead", "inductor", True, "m = torch.compile(m)", "Net",
                                    called_from=FRAME),
                        CompileSite("lib.py", 9, "", "eager", False, library=True)],
                       True, [TreeFunction(0, "partition_0", "FORWARD", "0/0", 2, "s0", 1)],
                       [CompiledEvent("skip", "mutated inputs", "skipping cudagraphs", FRAME, 2),
                        CompiledEvent("recompile", "guard", "recompiling", None, 1, "forward", "x.size()[0] == 8", "size")],
                       [TreeGraph(0, 0, 10, 8, (("gemm", 3), ("relu", 5)), "graph.dot"), TreeGraph(1, 0, 0, 0, error="gone")],
                       12, 40, 2, 100.5, 3.25, 6, 1 << 20, 1 << 19, [GraphBreak(FRAME, "Data-dependent branching", "if x", 2, "branch")],
                       3, 1.5, "trees", {"eager": 100.0, "compiled": 50.0}, "median", 1.02, ["a note"])


def piecewise() -> Piecewise:
    return Piecewise("measured", "torch.compile pieces", (SplitPoint("item", FRAME, "CG101"), SplitPoint("break")),
                     (Piece(1, 10, 5.5, graph()), Piece(2, 3, 1.0)), 13, 4, 6.5, 2.0, (("copy", 2), ("add", 1)),
                     ("piece 3: cpu op",), replay(), Timings(100.0, 50.0, 20, 1.5, 0.5, "events"), error(), "n", 1024, 512)


def modules() -> ModuleMap:
    call = CallSpec(({"tensor": [[2, 3], "float32", True, False]}, {"value": "3", "literal": True}),
                    {"mask": {"seq": "tuple", "items": []}}, True, True, False, "bfloat16")
    return ModuleMap("measured", 2, (ModuleEntry("model.enc", "Encoder", 1, "graphed", "", (), True, 12, call),
                                     ModuleEntry("model.head", "Head", 1, "fails", "item at train.py:12", tuple(findings()))),
                     ("model.enc",), replay(), Timings(10.0, 8.0, 5), error(), "note", ("model.enc", "model.x"), replay())


def report() -> Report:
    return Report("train.py", "step", "captured", "cuda", {"gpu": "H100", "torch": "2.11"},
                  {"warmup": 3, "mode": "global", "tuple": (1, 2)}, graph(), replay(), Timings(100.0, 25.0, 50, 3.5, 1.25, "events"),
                  GraphMemory(1 << 20, 1 << 19, 64, 128, 4096, 1 << 21), piecewise(), modules(), compiled(), node_profile(),
                  findings(), [error()], [Skip("no-cuda", "need a GPU"), Skip("node-lines", "no profiler")],
                  {"report.json": "out/report.json"}, "hello\n", "0.1.0")


def report_minimal() -> Report:
    return Report("a.py", "step")


def lint_result(interrupted: bool) -> LintResult:
    scripts = [ScriptResult("a.py", "step", "analysed", "cpu", findings(), [], ["CG501"], "no CUDA device", ["CG601"]),
               ScriptResult("b.py", status="error", errors=["SyntaxError at line 3: bad"])]
    return LintResult(scripts, "0.1.0", "cpu", interrupted, "SIGTERM" if interrupted else "Ctrl-C",
                      ["c.py"] if interrupted else [])


def trace() -> Trace:
    ops = [OpRecord("aten", "aten.mm", ((2, 3), (3, 4)), ("float32", "float32"), ("cuda:0", "cuda:0"), 0, 0, 7, True, False,
                    {"scalars": (1, 2.5), "via": "x", "obj": object.__new__(_Odd)}, 1, 4),
           OpRecord("call", "Tensor.item", host=True), OpRecord("sync-warning", "sync")]
    its = [Iteration(0, "warmup", ops, 7, {"x": (2, 3)}, None, [Rebind("model.avg", 0, True), Rebind("s")]),
           Iteration(1, "capture", [], None, {}, "RuntimeError: boom")]
    return Trace("cuda", True, [FRAME, Frame("lib.py", 1, "f")], its,
                 [StreamEvent(0, 1, "switch", 7, None, 0), StreamEvent(-1, 0, "create")], 0, 7, "tracer stopped")


class _Odd:
    def __str__(self) -> str:
        return "odd-object"


def bench_result(size: int | None, seed: int, cpu: bool = False) -> BenchResult:
    rng = random.Random(seed)

    def series(median: float, n: int = 60) -> list[float]:
        return [median * math.exp(rng.gauss(0, 0.02)) for _ in range(n)]

    samples = {"eager": {"gpu": series(540.0), "wall": series(600.0)}, "replay": {"gpu": series(40.0), "wall": series(41.0)}}
    probes: dict[str, dict[str, list[float | None]]] = {}
    if cpu:
        probes = {m: {c: [10.0 + (i % 7 == 0) * 20 for i in range(60)] for c in ("gpu", "wall")} for m in ("eager", "replay")}
    rounds = AdaptiveResult(samples, {"eager": 1200, "replay": 1200}, 60, 3.5, CONVERGED, 0.01, 0.95,
                            ["eager", "replay"] * 30, probes)
    return BenchResult.from_rounds(rounds, script="mlp.py", entry="step", size=size, gpu_floor_us=38.5, capture_ms=2.5,
                                   instantiate_ms=0.75, pool_bytes=1 << 20, memory=GraphMemory(1 << 20, 1 << 19),
                                   environment={"gpu": "H100"}, machine_best_us=9.0 if cpu else None, resamples=200)


def bench_report() -> BenchReport:
    return BenchReport((bench_result(8, 1, cpu=True), bench_result(16, 2)), {"sizes": [8, 16], "budget_s": 10.0},
                       (error(),), "0.1.0", SharedPool((16, 8), 1 << 21, 1 << 20, 4.5, 3 << 20))


def dist_report() -> DistReport:
    ranks = [RankResult(0, report(), "finished", "timing", "exit 0",
                        [Collective(0, "warmup", "all_reduce", "float32[64] SUM", True, FRAME, 2), Collective(1, "setup", "barrier")],
                        [DdpWrap(FRAME, True), DdpWrap(None, None)], {"backend": "nccl"}, "out", {"nodes": 4},
                        {"index": 1, "ranks": {"0": None}}),
             RankResult(1)]
    return DistReport("train.py", "step", 2, ranks, findings(), [error()], {"rank 1": {"added": []}},
                      {"eager_us": 10.0}, {"nproc": 2}, ["torchrun", "x"], 12.3456, {"report.json": "o"}, "0.1.0")


def samples() -> dict[str, Any]:
    """name -> record; every one of them has to_json()."""
    base = bench_report()
    slower = BenchReport((bench_result(8, 3), bench_result(32, 4)), {}, (), "0.1.0")
    return {
        "report": report(),
        "report_minimal": report_minimal(),
        "lint": lint_result(False),
        "lint_interrupted": lint_result(True),
        "trace": trace(),
        "bench": base,
        "comparison": compare(slower, base, pct=5.0),
        "round_status": RoundStatus(3, 1.5, 10.0, 300, 1000, math.inf, 0.01),
        "round_status_finite": RoundStatus(3, 1.5, 10.0, 300, 1000, 0.02, None),
        "estimate_unbounded": Estimate(math.inf, -math.inf, math.inf, 0.9),
        "cpu_load": CpuLoad(10.0, 15.0, 20, 12, 3.0, True, 600.0, 40.0, 15.0, 2.0),
        "dist": dist_report(),
        "node_profile_bare": node_profile(False),
    }


def write_golden(folder: str) -> None:
    """Writes every sample's JSON as tests/test_codec.py compares it. Only for an intended change of the JSON (a new
    schema): `git diff tests/data/codec` must then show that change and nothing else."""
    import json
    from pathlib import Path

    for name, record in samples().items():
        (Path(folder) / f"{name}.json").write_text(json.dumps(record.to_json(), indent=1) + "\n")


if __name__ == "__main__":  # PYTHONPATH=. python tests/codec_samples.py
    import os

    write_golden(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "codec"))
