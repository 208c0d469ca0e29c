"""Findings about torch.compile's CUDA graphs (CG701-CG704) from an observed compiled run (model/compiled.py):
skips, re-records, fallbacks, and how much of the step's GPU work the graphs cover. At the user's line where torch
names one (FX stack traces), else at the torch.compile call."""

from __future__ import annotations

from cgtool.model.compiled import (
    DYNAMIC_SHAPES,
    FALLBACKS,
    OVERWRITTEN,
    PARTITION,
    PENDING_BACKWARD,
    RERECORD,
    SKIP,
    CompiledEvent,
    CompiledRun,
)
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.rules import finding

RERECORD_LIMIT = 2  # re-records of one function before CG702 (torch's own limit is 128, and off in 2.11)
MIN_SHARE = 0.5  # CG704 below this share of a steady step's kernels inside graphs


def check_compiled(run: CompiledRun, script: str | None = None) -> list[Finding]:
    if not run.observed:
        return []
    site = _site_frame(run)
    out = [_at(finding("CG701", f"torch.compile skipped CUDA graphs: {e.reason}"), e.frame or site)
           for e in run.of_kind(SKIP)]
    for e in run.of_kind(PARTITION):
        if e.frame is not None:  # the user's op: a split the user can remove (torch.cond and the like have none)
            out.append(_at(finding("CG701", f"torch.compile {e.reason}: that part runs outside CUDA graphs",
                                   severity="warning"), e.frame))
    out += _rerecords(run, site)
    for e in run.of_kind(*FALLBACKS):
        out.append(_at(finding("CG703", _fallback_message(e)), e.frame or site))
    share = run.kernel_share
    if share is not None and share < MIN_SHARE:
        n, total = run.kernels_in_graphs or 0, (run.kernels_in_graphs or 0) + (run.kernels_outside or 0)
        out.append(_at(finding("CG704", f"{n} of {total} GPU kernels per step ({share:.0%}) run inside "
                                        "torch.compile's CUDA graphs"), site))
    return out


def _rerecords(run: CompiledRun, site: Frame | None) -> list[Finding]:
    out = []
    for e in run.of_kind(DYNAMIC_SHAPES):
        out.append(_at(finding("CG702", f"torch.compile {e.reason} (CUDA graphs per size)"), site))
    worst = max((f.rerecords for f in run.functions), default=0)
    reasons = run.of_kind(RERECORD)
    if worst >= RERECORD_LIMIT:
        why = "; ".join(sorted({e.reason for e in reasons})) or "an input's address changed"
        frame = next((e.frame for e in reasons if e.frame), None) or site
        out.append(_at(finding("CG702", f"a compiled function re-recorded its CUDA graph {worst} times: {why}"), frame))
    return out


def _fallback_message(e: CompiledEvent) -> str:
    if e.kind == PENDING_BACKWARD:
        return ("torch.compile cannot replay its CUDA graphs: outputs of a previous call still wait for backward() "
                "(no cudagraph_mark_step_begin between steps)")
    if e.kind == OVERWRITTEN:
        return "an output of torch.compile's CUDA graphs is read after a later call overwrote it"
    return f"torch.compile fell back from its CUDA graphs: {e.reason}"


def _site_frame(run: CompiledRun) -> Frame | None:
    site = next((s for s in run.sites if s.cudagraphs), run.sites[0] if run.sites else None)
    return None if site is None else Frame(site.file, site.line, "", site.source)


def _at(f: Finding, frame: Frame | None) -> Finding:
    if frame is None:
        return f
    from dataclasses import replace

    return replace(f, file=frame.file, line=frame.line, source=frame.source or None, function=frame.function or None)
