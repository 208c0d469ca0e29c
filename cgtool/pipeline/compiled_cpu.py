"""Compiled code on a machine without CUDA: what can be said honestly. The CPU analysis has traced the step
already (under its dispatch mode dynamo runs compiled code eagerly, so the tracer sees the ops of compiled
functions as well). Here the step runs once more with dynamo on, every compile call built with the "eager"
backend (the compile watch swaps it: no inductor, no C++ compiler): dynamo's graph breaks and recompiles, with the
user's line, come out as on the GPU. CUDAGraph Trees run only on CUDA devices, so skips, re-records, fallbacks and
the kernel share (CG701-CG704) are listed as not checked."""

from __future__ import annotations

from typing import Any

from cgtool.model.compiled import RECOMPILE, CompiledRun, describe_mode
from cgtool.model.compiled_logs import breaks_from_records, recompile_events
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import Report
from cgtool.script.contract import Script, load_script

NOT_CHECKED = ("CUDAGraph Trees run only on CUDA devices: the graphs torch.compile records, its skips, re-records, "
               "fallbacks and the share of kernels in graphs (CG701-CG704) need a GPU")


def run_compiled_on_cpu(script: Script, settings: dict[str, Any], report: Report, progress: PhaseLog,
                        watch: Any) -> CompiledRun:
    import torch

    sites = list(watch.sites)
    run = CompiledRun(mode=describe_mode(sites), sites=sites, observed=False)
    report.compiled = run
    warm = int(settings.get("warmup", 3)) + 1
    progress.phase("dynamo", f"{warm} iterations on CPU with dynamo on (backend \"eager\"): graph breaks")
    start, device, phase = len(watch.records), torch.device("cpu"), "load"
    torch._dynamo.reset()  # what dynamo compiled before (another script in this process) would hide recompiles
    from cgtool.pipeline.compiled_capture import dynamo_graphs

    before = dynamo_graphs() or 0
    try:
        again = load_script(script.path, script.entry)
        phase = "setup"
        state = again.call_setup(device)
        watch.phase = "step"
        for i in range(warm):
            phase = "inputs"
            inputs = again.call_inputs(i, device)
            phase = "step"
            watch.iteration = i
            again.call_step(state, inputs)
        run.iterations = warm
    except Exception as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        run.notes.append(f"the dynamo run on CPU stopped in {phase}: {type(exc).__name__}: {first} (graph breaks "
                         "after that point are not known)")
    seen = {(s.file, s.line, s.target) for s in sites}
    run.sites = sites + [s for s in watch.sites[len(sites):] if (s.file, s.line, s.target) not in seen]
    run.mode = describe_mode(run.sites)
    run.breaks = breaks_from_records(watch.records[start:])
    run.events = recompile_events(watch.records[start:])
    if run.iterations and dynamo_graphs() is not None:
        run.dynamo_graphs = (dynamo_graphs() or 0) - before
    run.notes.append(f"the step ran {run.iterations} times on the CPU with dynamo on (backend \"eager\")")
    report.findings = merge_break_findings(report.findings, run)
    report.skipped.append(NOT_CHECKED)
    return run


def merge_break_findings(findings: list, run: CompiledRun) -> list:
    """The tracer's findings plus a CG705 for each graph break. Under CUDA graphs torch.compile splits the graph
    at a break instead of failing (the GPU reports the break, not a failed capture), and records a graph per
    input size instead of replaying the wrong shape (CG702, not CG301): the tracer's findings give way there."""
    from cgtool.checks.compiled import check_compiled

    breaks = {(b.frame.file, b.frame.line) for b in run.breaks if b.frame is not None}
    resized = {(e.frame.file, e.frame.line) for e in run.of_kind(RECOMPILE)
               if e.frame is not None and "size mismatch" in e.reason}
    keep = [f for f in findings if not run.graphing or not ((f.file, f.line) in breaks
                                                              or (f.rule == "CG301" and (f.file, f.line) in resized))]
    return keep + check_compiled(run)
