"""A step that calls code compiled without CUDA graphs (`torch.compile(model)`, `mode="max-autotune-no-cudagraphs"`,
backend "aot_eager", ...) on a CUDA device: cgtool captures the compiled code itself. The capture runs untraced
(dynamo runs nothing compiled under the tracer's dispatch mode: a traced capture would hold the eager kernels, a
program the user does not run), then the graph is checked for the compiled kernels: Triton kernels where inductor
made them. Graph breaks and recompiles come from the compile watch."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cgtool.model.job import CaptureSettings
from cgtool.model.compiled import CompiledRun, describe_mode
from cgtool.model.compiled_logs import breaks_from_records, recompile_events
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import Report
from cgtool.model.report_parts import NODE_LINES, RULES_NOT_CHECKED, Skip
from cgtool.script.contract import Args, Script


def capture_compiled(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog,
                     work_dir: str | None, watch: Any, state: Args | None) -> CompiledRun:
    from cgtool.pipeline.gpu_run import run_gpu_pipeline

    run = CompiledRun(mode=describe_mode(watch.sites) + ": captured by cgtool, untraced", sites=list(watch.sites),
                      observed=True, captured_by="cgtool")
    report.compiled = run
    watch.phase = "step"
    untraced = replace(settings, checks=False)
    before = dynamo_graphs()
    try:
        captured = run_gpu_pipeline(script, untraced, report, progress, work_dir, state=state)
        if settings.node_lines and captured is not None and report.graph is not None \
                and report.graph.nodes:
            from cgtool.pipeline.compiled_lines import compiled_node_lines

            progress.phase("node-lines", "each node's launch in inductor's code, its line, its replay GPU time")
            try:
                report.node_lines = compiled_node_lines(captured, report.graph, report)
            except Exception as exc:  # noqa: BLE001 - node lines are optional to the compiled run
                report.skipped.append(Skip(NODE_LINES, (
                        f"lines of the compiled graph's nodes: {type(exc).__name__}: {exc}")))
    finally:
        run.sites = list(watch.sites)
        run.breaks = breaks_from_records(watch.records)
        run.events = recompile_events(watch.records)
        run.dynamo_graphs = dynamo_graphs_since(before)
        _kernels(run, report)
    report.skipped.append(Skip(RULES_NOT_CHECKED, (
            "the tracer's checks (CG1xx-CG4xx) during warmup and capture: dynamo runs nothing compiled under them, so "
            "the capture ran untraced; a failed capture is named by its traceback")))
    return run


def dynamo_graphs_since(before: int | None) -> int | None:
    """Graphs dynamo compiled since a `dynamo_graphs()` reading (None when torch keeps no count)."""
    now = dynamo_graphs()
    return None if now is None else now - (before or 0)


def dynamo_graphs() -> int | None:
    """Graphs dynamo compiled in this process (graph breaks and recompiles each add one)."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:
        return None


def _kernels(run: CompiledRun, report: Report) -> None:
    """Which kernels the graph holds: Triton kernels are inductor's; none where inductor compiled means the
    captured code was not the compiled code (or inductor left everything to library kernels)."""
    graph = report.graph
    if graph is None:
        return
    kernels = [n for n in graph.nodes if n.kind == "kernel"]
    run.triton_kernels = sum(1 for n in kernels if (n.name or "").startswith("triton"))
    run.kernels_in_graphs, run.kernels_outside = len(kernels), 0
    if any(s.backend == "inductor" for s in run.sites) and kernels and not run.triton_kernels:
        run.notes.append(f"the captured graph holds {len(kernels)} kernels and no Triton kernel: inductor's code did "
                         "not run in the capture, or it left every op to library kernels (cuBLAS, cuDNN)")
    elif run.triton_kernels:
        run.notes.append(f"the captured graph holds {run.triton_kernels} Triton kernels of {len(kernels)}: the "
                         "compiled code was captured")
