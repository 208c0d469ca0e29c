"""The trees' CUDA graphs read through cuda-bindings (kept by TreesObserver's keep_graph swap), and the kernel
split of a profiled steady step (kernels launched by cudaGraphLaunch versus one by one)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from typing import Any

from cgtool.capture.trees import tree_nodes
from cgtool.graph.model import Graph
from cgtool.model.compiled import TreeGraph


def read_tree_graphs(mgr: Any, work_dir: str | None) -> tuple[list[TreeGraph], list[Graph]]:
    """One TreeGraph per recorded node (kernel names, counts) and its Graph model; the driver's DOT of each
    lands in work_dir as graph.dot, graph-2.dot, ... (TreeGraph.dot: that file name)"""
    from cgtool.graph.cuda import read_cuda_graph, write_driver_dot

    out: list[TreeGraph] = []
    models: list[Graph] = []
    for node in tree_nodes(mgr):
        gid, fid = int(getattr(node.id, "id", 0)), int(getattr(node.wrapped_function.id, "id", 0))
        g = getattr(node, "graph", None)
        try:
            if g is None:
                raise LookupError("the tree node holds no CUDA graph")
            handle = int(g.raw_cuda_graph())
            graph = read_cuda_graph(handle)
        except Exception as exc:
            out.append(TreeGraph(gid, fid, 0, 0, error=f"{type(exc).__name__}: {str(exc)[:300]}"))
            continue
        dot = None
        if work_dir:
            name = "graph.dot" if not models else f"graph-{len(models) + 1}.dot"
            try:
                write_driver_dot(handle, os.path.join(work_dir, name))
                dot = name
            except Exception:
                dot = None
        kernels = Counter(n.name for n in graph.nodes if n.kind == "kernel")
        out.append(TreeGraph(gid, fid, len(graph.nodes), sum(kernels.values()), tuple(kernels.most_common()), dot))
        models.append(graph)
    return out, models


def profile_steps(step: Callable[[int], Any], first: int, n: int = 3) -> dict[str, Any]:
    """Profile n steady steps (each in a cgtool-step-N annotation) and split their kernels; also how many
    kernels per step are Triton's (inductor's generated code, proof that the compiled code ran)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from cgtool.capture.kernel_split import STEP_PREFIX, chrome_trace, split_kernels

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for k in range(n):
            with record_function(f"{STEP_PREFIX}{first + k}"):
                step(first + k)
            torch.cuda.synchronize()
    trace = chrome_trace(prof)
    split = split_kernels(trace)
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    triton = sum(1 for e in events if e.get("cat") == "kernel" and str(e.get("name", "")).startswith("triton_"))
    return {"split": split, "triton_per_step": round(triton / max(1, n))}
