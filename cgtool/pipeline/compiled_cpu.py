"""Compiled code on a machine without CUDA: what can be said honestly. The CPU analysis has traced the step
already (under its dispatch mode dynamo runs compiled code eagerly, so the tracer sees the ops of compiled
functions as well). Here the step runs once more with dynamo on, every compile call built with the "eager"
backend (the compile watch swaps it: no inductor, no C++ compiler): dynamo's graph breaks and recompiles, with the
user's line, come out as on the GPU. CUDAGraph Trees run only on CUDA devices, so skips, re-records, fallbacks and
the kernel share (CG701-CG704) are listed as not checked."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from cgtool.model.job import CaptureSettings
from cgtool.model.compiled import CompiledRun, describe_mode
from cgtool.model.compiled_logs import breaks_from_records, recompile_events
from cgtool.model.finding import Finding
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import Report
from cgtool.model.report_parts import NOT_IN_GRAPHS, RULES_NOT_CHECKED, Skip
from cgtool.model.rules import PYTHON_NUMBER
from cgtool.script.contract import Script, ScriptRaised, load_script
from cgtool.script.session import ScriptSession

NOT_CHECKED = Skip(RULES_NOT_CHECKED, "CUDAGraph Trees run only on CUDA devices: the graphs torch.compile records, its "
                   "skips, re-records, fallbacks and the share of kernels in graphs (CG701-CG704) need a GPU")


def run_compiled_on_cpu(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog,
                        watch: Any) -> CompiledRun:
    import torch

    sites = list(watch.sites)
    run = CompiledRun(mode=describe_mode(sites), sites=sites, observed=False)
    report.compiled = run
    warm = settings.warmup + 1
    progress.phase("dynamo", f"{warm} iterations on CPU with dynamo on (backend \"eager\"): graph breaks")
    start = len(watch.records)
    torch._dynamo.reset()  # what dynamo compiled before (another script in this process) would hide recompiles
    from cgtool.pipeline.compiled_capture import dynamo_graphs, dynamo_graphs_since

    before = dynamo_graphs()
    try:
        again = ScriptSession(load_script(script.path, script.entry, *script.names), torch.device("cpu"))
        again.setup()
        watch.phase = "step"
        for i in range(warm):
            inputs = again.inputs(i)
            watch.iteration = i
            again.step(inputs)
        run.iterations = warm
    except Exception as raised:
        # where it stopped: the script's phase (load: a ScriptRaised of load_script, or a CgtoolError) and its error
        phase, exc = (raised.phase, raised.exc) if isinstance(raised, ScriptRaised) else ("load", raised)
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        run.notes.append(f"the dynamo run on CPU stopped in {phase}: {type(exc).__name__}: {first} (graph breaks "
                         "after that point are not known)")
    seen = {(s.file, s.line, s.target) for s in sites}
    run.sites = sites + [s for s in watch.sites[len(sites):] if (s.file, s.line, s.target) not in seen]
    run.mode = describe_mode(run.sites)
    run.breaks = breaks_from_records(watch.records[start:])
    run.events = recompile_events(watch.records[start:])
    if run.iterations:
        run.dynamo_graphs = dynamo_graphs_since(before)
    run.notes.append(f"the step ran {run.iterations} times on the CPU with dynamo on (backend \"eager\")")
    report.findings, left_out = merge_cpu_findings(report.findings, run, watch.code_ranges)
    if left_out:
        report.skipped.append(Skip(NOT_IN_GRAPHS, (
                f"{left_out} finding(s) of the CPU analysis in code that runs outside the compiled functions: under "
                "torch.compile's CUDA graphs only compiled code is in a graph")))
    report.skipped.append(NOT_CHECKED)
    return run


def merge_cpu_findings(findings: list[Finding], run: CompiledRun,
                       ranges: list[tuple[str, int, int]]) -> tuple[list[Finding], int]:
    """The tracer's findings as the GPU would judge them, plus CG705 for each graph break and CG702 for recompiles
    (checks/compiled.py); how many were left out. Without CUDA graphs cgtool captures the whole step: every finding
    stands. Under CUDA graphs (the trees) only compiled code is in a graph, and torch.compile copes with what
    breaks a plain capture: a sync splits the graph (CG705 at that line), a changing shape or Python number is
    guarded and recompiled (CG702 from dynamo's recompiles), a CPU tensor splits or skips the graph (CG701)."""
    from cgtool.checks.compiled import check_compiled

    if not run.graphing:
        return findings + check_compiled(run), 0
    breaks = {(b.frame.file, b.frame.line) for b in run.breaks if b.frame is not None}
    keep, dropped = [], 0
    for f in findings:
        inside = f.file is not None and f.line is not None and any(
            os.path.abspath(f.file) == file and first <= f.line <= last for file, first, last in ranges)
        if not inside:
            dropped += 1
        elif (f.file, f.line) in breaks or f.rule == "CG301" or (f.rule == "CG402" and f.kind == PYTHON_NUMBER):
            continue  # said by CG705 / CG702 from what dynamo did
        elif f.rule == "CG408":
            continue  # dynamo replays a compiled function's Python side effects (list appends, counters) every call
        elif f.rule == "CG402":
            keep.append(replace(f, rule="CG701", category="compiled", severity="warning", kind=None, predicts=None,
                                message=f"a CPU tensor in compiled code ({f.message}): torch.compile runs that part "
                                        "outside its CUDA graphs (a graph split at CPU ops) or skips them"))
        else:
            keep.append(f)
    return keep + check_compiled(run), dropped
