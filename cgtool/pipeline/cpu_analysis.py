"""The CPU analysis: run the script on the CPU under the CUDA stand-ins, trace its warmup iterations,
and run the checks. It catches every hazard that shows in the ops and calls; GPU_ONLY_RULES
(cgtool/model/rules.py) lists the rules only a GPU run can establish (the capture itself, the graph, replay versus eager).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from cgtool.model.finding import Finding
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import ErrorRecord
from cgtool.model.trace import Trace
from cgtool.script.contract import Args, Script, ScriptRaised
from cgtool.script.errors import error_record
from cgtool.script.session import ScriptSession


def analyze_on_cpu(script: Script | ScriptSession, warmup: int = 3,
                   progress: PhaseLog | None = None) -> tuple[Trace, list[Finding], list[ErrorRecord]]:
    """Run setup, `warmup` traced iterations (inputs(i) each) and one traced capture iteration (inputs(warmup))
    under the CUDA stand-ins, as the GPU run does; return the trace, the findings, and the errors the script
    raised (phase setup, inputs, warmup or capture). When the step raises, the iterations so far are still
    checked: the last op names the line. `progress` hears the phases (setup, warmup).

    `script` may come as a session with hooks (the module map's watch), made on `torch.device("cuda")`.
    The device passed to setup() and inputs() is `torch.device("cuda")`, as on a GPU, so scripts that choose by
    device (`capturable=(device.type == "cuda")`, pinned memory, fused kernels) take their GPU path; the
    stand-ins run it on the CPU. During the capture iteration `torch.cuda.is_current_stream_capturing()` is
    true for the script and its libraries, so capture-aware code (transformers skips data-dependent checks)
    takes the path it takes under a real capture."""
    import torch

    from cgtool.checks import run_checks
    from cgtool.trace.standins import CAPTURE_STREAM, DEFAULT_STREAM, cuda_standins, run_on_cpu
    from cgtool.trace.tracer import Tracer

    session = script if isinstance(script, ScriptSession) else ScriptSession(script, torch.device("cuda"))
    errors: list[ErrorRecord] = []
    with cuda_standins() as cuda:
        tracer = Tracer(virtual_cuda=True, stream_probe=cuda.probe, device="cpu", call=run_on_cpu)
        cuda.record = tracer.stream_event
        trace = tracer.trace
        trace.default_stream, trace.capture_stream = DEFAULT_STREAM, CAPTURE_STREAM
        with tracer:
            if progress is not None:
                progress.phase("setup", "on CPU")
            state = _phase(errors, "setup", tracer, cuda, session.setup)
            if progress is not None and state is not None:
                progress.phase("warmup", f"{warmup} iterations and an emulated capture on CPU")
            for i in range(warmup + 1):
                if state is None:
                    break  # setup failed: nothing to run
                phase = "warmup" if i < warmup else "capture"
                inputs = _phase(errors, "inputs", tracer, cuda, functools.partial(session.inputs, i))
                if errors:
                    break
                cuda.begin_iteration(capturing=phase == "capture")
                try:
                    with cuda.paused(), tracer.iteration(i, phase, inputs=inputs):
                        session.call(inputs)
                except Exception as exc:  # the user's step raised: report it, check what ran
                    errors.append(error_record(phase, exc))
                    break
                finally:
                    cuda.capturing = False
    return trace, run_checks(trace), errors


def _phase(errors: list[ErrorRecord], phase: str, tracer: Any, cuda: Any,
           call: Callable[[], Args | None]) -> Args | None:
    try:
        with cuda.paused(), tracer.host_watch(phase):  # the tracer's call hook stands in for the mode
            value = call()
            tracer.mark_unseen(phase, value)
            return value
    except ScriptRaised as raised:
        errors.append(error_record(raised.phase, raised.exc))
        return None
    except Exception as exc:
        errors.append(error_record(phase, exc))
        return None
