"""A compiled step on a machine without CUDA: what can be said honestly. The compile calls and their modes are
known (script/compile_sites.py); CUDAGraph Trees only run on CUDA devices (the probe's CPU run on torch 2.13 shows
no tree, only a silent skip counter), so CG701-CG704 are listed as not checked. The step is run eagerly on the CPU
(torch.compile replaced by the identity: inductor's CPU path makes no CUDA graphs and takes long to build) to
prove that setup, inputs and step run; the tracer's checks are left out, since they judge eager code that
torch.compile would not run as such."""

from __future__ import annotations

from typing import Any

from cgtool.model.compiled import CompiledRun, CompileSite, describe_mode
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import CPU_ONLY, SCRIPT_ERROR, Report
from cgtool.script.contract import Script, load_script
from cgtool.script.errors import error_record

NOT_CHECKED = ("CUDAGraph Trees run only on CUDA devices: the graphs torch.compile records, its skips, re-records, "
               "fallbacks and the share of kernels in graphs (CG701-CG704) need a GPU")


def run_compiled_on_cpu(script: Script, settings: dict[str, Any], report: Report, progress: PhaseLog,
                        sites: list[CompileSite]) -> CompiledRun:
    import torch

    from cgtool.pipeline.compiled_timing import EAGER, compile_replaced

    report.device = "cpu"
    run = CompiledRun(mode=describe_mode(sites), sites=list(sites), observed=False)
    report.compiled = run
    device = torch.device("cpu")
    warm = int(settings.get("warmup", 3))
    progress.phase("warmup", f"{warm} eager iterations on CPU (torch.compile replaced by the identity)")
    phase = "load"
    try:
        with compile_replaced(EAGER):
            eager = load_script(script.path, script.entry)
            phase = "setup"
            state = eager.call_setup(device)
        for i in range(warm):
            phase = "inputs"
            inputs = eager.call_inputs(i, device)
            phase = "warmup"
            eager.call_step(state, inputs)
        run.iterations = warm
        run.notes.append(f"the step ran {warm} times eagerly on the CPU")
    except Exception as exc:
        report.errors.append(error_record(phase, exc))
    report.status = SCRIPT_ERROR if report.errors else CPU_ONLY
    report.skipped.append(NOT_CHECKED)
    report.skipped.append("the tracer's checks (CG1xx-CG4xx): the step is compiled, so its eager ops are not what runs")
    return run
