"""Benchmark `cgtool dot` on a 3,000-node driver DOT: parse + summarize against pydot, and the folded render.

    .venv/bin/python benchmarks/dot_parse.py [--file DUMP.dot] [--skip-pydot] [--repeat 5]

Without --file it synthesizes bench-data/driver_3000.dot (git-ignored): the driver's verbose record
format, copied from tests/data/*.dot, for a 1,000-block model with 3 kernels a block (gemm → relu →
residual add, as samples/deep_1000.py captures), chained like the real dump (~1.7 MB).
A real dump from the GPU machine (benchmarks/make_driver_dots.py) can be given with --file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgtool.graph.graph_file import read_graph_file  # noqa: E402
from cgtool.graph.summary import summarize  # noqa: E402
from cgtool.render.dot import graph_to_dot, render_file  # noqa: E402

OUT_DIR = ROOT / "bench-data"
KERNELS = (  # (symbol as the driver prints it, launch dims) of one block, from real torch dumps
    (r"_Z16gemmSN_TN_kernelIfLi128ELi16ELi2ELi4ELi8ELi9ELb0E30cublasGemvTensorStridedBatchedIKfES2_S0_IfEEv22"
     r"cublasGemmSmallNParamsIT7_T8_T9_T_E", r"\<\<\<32,128,0\>\>\>"),
    (r"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_49_GLOBAL__N__d2ba64fb_16_TensorCompare_cu_71e06f4e19"
     r"launch_clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEENKUlvE_clEvENKUlvE5_"
     r"clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_", r"\<\<\<2,128,0\>\>\>"),
    (r"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
     r"\<\<\<8,128,0\>\>\>"),
)
NODE = """"graph_1_node_{i}"[style="bold" shape="record" label="{{KERNEL
| {{ID | {i} (topoId: {topo}) | {name}{dims}}}
| {{{{node handle | func handle}} | {{0x{handle:016X} | 0x{func:016X}}}}}
| {{accessPolicyWindow | {{base_ptr | num_bytes | hitRatio | hitProp | missProp}} | {{0x0000000000000000 | 0 | 0.000000 | N | N}}}}
| {{cooperative | 0}}
| {{priority | 0}}
}}"];

"""


def synthesize(path: Path, blocks: int = 1000) -> None:
    n = blocks * len(KERNELS)
    parts = ['digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n']
    for i in range(n):
        name, dims = KERNELS[i % len(KERNELS)]
        parts.append(NODE.format(i=i, topo=n - 1 - i, name=name, dims=dims, handle=0x0F0642F0 + 0x768 * i,
                                 func=0x0D6F4D50 + 0x1000 * (i % len(KERNELS))))
    parts.extend(f'"graph_1_node_{i}" -> "graph_1_node_{i + 1}" [headlabel=0];\n' for i in range(n - 1))
    parts.append("}\n}\n")
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(parts))


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """(first run, median of `repeat` runs, result) in seconds."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times[0], statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, help="a driver DOT to use instead of the synthesized one")
    ap.add_argument("--skip-pydot", action="store_true", help="do not time pydot (it takes about half a minute)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = args.file or OUT_DIR / "driver_3000.dot"
    if args.file is None and not path.exists():
        synthesize(path)
    print(f"input: {path} ({path.stat().st_size / 1e6:.2f} MB)")

    first, median, (graph, summary) = timed(lambda: (g := read_graph_file(path), summarize(g)), args.repeat)
    print(f"cgtool parse+summarize: {median:.3f} s median of {args.repeat} (first run {first:.3f} s): "
          f"{summary.nodes:,} nodes, {summary.edges:,} edges, "
          + ", ".join(f"×{r.count} block of {len(r.block)}" for r in summary.repeats))

    if not args.skip_pydot:
        import pydot

        t0 = time.perf_counter()
        parsed = pydot.graph_from_dot_file(str(path))
        pydot_s = time.perf_counter() - t0
        edges = sum(len(s.get_edge_list()) for s in parsed[0].get_subgraph_list())
        print(f"pydot parse only: {pydot_s:.2f} s ({edges:,} edges); "
              f"cgtool parse+summarize is {pydot_s / median:.0f}× faster")

    out = OUT_DIR / "driver_3000_folded.svg" if args.file is None else OUT_DIR / (path.stem + "_folded.svg")
    first, median, _ = timed(lambda: render_file(graph_to_dot(graph).source, os.fspath(out)), max(1, args.repeat // 2))
    print(f"folded render (graph_to_dot + dot -Tsvg): {median:.3f} s median (first run {first:.3f} s) -> {out}")
    full = out.with_name(out.stem.replace("_folded", "_unfolded") + ".svg")
    t0 = time.perf_counter()
    render_file(graph_to_dot(graph, fold=False, max_nodes=len(graph.nodes)).source, os.fspath(full))
    print(f"unfolded render of all {len(graph.nodes):,} nodes, for comparison: {time.perf_counter() - t0:.2f} s -> {full}")


if __name__ == "__main__":
    main()
