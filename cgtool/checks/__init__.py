"""Checks: plain functions `check(trace) -> list[Finding]`, one module per rule family, listed in CHECKS."""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Callable, Collection, Sequence

from cgtool.checks.accumulate_grad import check_accumulate_grad
from cgtool.checks.host import check_device_work, check_host_copies, check_host_scalars
from cgtool.checks.rng import check_rng, check_rng_reset
from cgtool.checks.shapes import check_control_flow, check_shapes
from cgtool.checks.state import check_host_state, check_rebound_state
from cgtool.checks.streams import check_streams
from cgtool.checks.sync import check_sync
from cgtool.model.finding import CPU_TRACE, GPU_TRACE, Finding
from cgtool.model.trace import Trace

Check = Callable[[Trace], list[Finding]]

CHECKS: list[Check] = [
    check_sync,
    check_streams,
    check_shapes,
    check_control_flow,
    check_rng,
    check_rng_reset,
    check_rebound_state,
    check_host_state,
    check_host_copies,
    check_host_scalars,
    check_device_work,
    check_accumulate_grad,
]


def trace_origin(trace: Trace) -> str:
    """GPU_TRACE for a trace of the real GPU run, CPU_TRACE for the CPU run (its CUDA stand-ins included)."""
    return GPU_TRACE if trace.device.startswith("cuda") and not trace.virtual_cuda else CPU_TRACE


def run_checks(trace: Trace, checks: Sequence[Check] = CHECKS, *, skip_rules: Collection[str] = ()) -> list[Finding]:
    """All findings of `checks` on `trace`, one per (rule, file, line), the first found kept, in file/line order;
    each of the trace's origin (trace_origin)."""
    seen: set[tuple[str, str | None, int | None]] = set()
    origin = trace_origin(trace)
    out: list[Finding] = []
    was_enabled = gc.isenabled()
    gc.disable()  # a large trace is many objects: collections would rescan them for nothing
    try:
        for check in checks:
            for f in check(trace):
                key = (f.rule, f.file, f.line)
                if key not in seen and f.rule not in skip_rules:
                    seen.add(key)
                    out.append(replace(f, origin=origin))
    finally:
        if was_enabled:
            gc.enable()
    return sorted(out, key=lambda f: (f.file or "", f.line or 0, f.rule))


__all__ = ["CHECKS", "Check", "run_checks", "trace_origin"]
