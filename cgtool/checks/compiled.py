"""Findings about torch.compile's CUDA graphs (CG701-CG704) from an observed compiled run (model/compiled.py):
skips, re-records, fallbacks, and how much of the step's GPU work the graphs cover. At the user's line where torch
names one (FX stack traces), else at the torch.compile call."""

from __future__ import annotations

from cgtool.model.compiled import (
    DYNAMIC_SHAPES,
    FALLBACKS,
    GUARD_SIZE,
    OVERWRITTEN,
    PARTITION,
    PENDING_BACKWARD,
    RERECORD,
    SKIP,
    RECOMPILE,
    CompiledEvent,
    CompiledRun,
    GraphBreak,
)
from dataclasses import replace

from cgtool.model.finding import COMPILED, Finding
from cgtool.model.frame import Frame
from cgtool.model.rules import finding

RERECORD_LIMIT = 2  # re-records of one function before CG702 (torch's own limit is 128, and off in 2.11)
MIN_SHARE = 0.5  # CG704 below this share of a steady step's kernels inside graphs


def check_compiled(run: CompiledRun, script: str | None = None) -> list[Finding]:
    site = _site_frame(run)
    out = [_break_finding(run, b) for b in run.breaks if b.frame is not None]
    if run.dynamo_graphs == 0 and run.iterations and run.sites:
        s = run.sites[0]
        what = f"{s.form} of `{s.target}`" if s.target else s.form
        out.append(_at(finding("CG701", f"torch.compile compiled nothing: {what} ran eagerly in every call (dynamo "
                                        "made no graph; it skips code that lies wholly in torch's own files, such as "
                                        "nn.Sequential's forward compiled through Module.compile())",
                               severity="warning"), Frame(s.file, s.line, "", s.source)))
    if run.graphing:
        out += _recompiles(run, site)
    if not run.observed or run.captured_by != "trees":
        return _unique(out)
    out += [_at(finding("CG701", f"torch.compile skipped CUDA graphs: {e.reason}"), e.frame or site)
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
    return _unique(out)


BREAK_WHAT = {"item": "a GPU value read on the host", "branch": "a branch on a tensor's value",
              "print": "a print of a tensor", "call": "a call dynamo cannot trace", "other": "code dynamo cannot trace"}


def _break_finding(run: CompiledRun, b: GraphBreak) -> Finding:
    what = BREAK_WHAT.get(b.kind, BREAK_WHAT["other"])
    count = sum(1 for x in run.breaks if x.frame is not None)
    graphs = f"the compiled code runs as {count + 1} or more graphs"
    cost = ""
    if run.graphing and b.kind == "item":
        cost = ", with the host waiting for the GPU between them"
    if run.observed and run.us_outside and run.kernels_outside:
        cost += (f"; in the steady step {run.kernels_outside} kernels ({run.us_outside:.0f} µs) run outside the "
                 "CUDA graphs")
    f = finding("CG705", f"graph break in compiled code ({what}): {b.reason}; {graphs}{cost}",
                evidence=b.detail or None)
    return _at(f, b.frame)


def _unique(findings: list[Finding]) -> list[Finding]:
    """One finding per rule and line (a re-record and the recompile behind it name the same call), each of origin
    COMPILED."""
    seen, out = set(), []
    for f in findings:
        key = (f.rule, f.file, f.line)
        if key not in seen:
            seen.add(key)
            out.append(replace(f, origin=COMPILED))
    return out


def _recompiles(run: CompiledRun, site: Frame | None) -> list[Finding]:
    """dynamo's recompiles at the user's call that passed the new input: a new shape means a CUDA graph per
    distinct size; other guards (a Python number's value) failing twice or more mean a graph per value."""
    out = []
    calls = [e for e in run.of_kind(RECOMPILE) if e.frame is not None]
    shapes = [e for e in calls if e.guard_on]
    if shapes:
        e = shapes[0]
        what = "input shapes change" if e.guard_on == GUARD_SIZE else "a Python int argument changes"
        out.append(_at(finding("CG702", f"{what} between calls ({e.guard}): dynamo recompiles "
                                        "with it as a symbol and torch.compile records a CUDA graph per distinct "
                                        f"value{_context(site, e.frame)}"), e.frame))
    per_fn: dict[str, list[CompiledEvent]] = {}
    for e in calls:
        if not e.guard_on:
            per_fn.setdefault(e.function, []).append(e)
    for fn, evs in per_fn.items():
        n = sum(e.count for e in evs)
        if n >= RERECORD_LIMIT:
            why = evs[-1].guard
            out.append(_at(finding("CG702", f"dynamo recompiled {_code_name(fn)} {n} times (each time a new graph to "
                                            f"compile and record): {why}{_context(site, evs[0].frame)}"),
                           evs[0].frame))
    return out


def _rerecords(run: CompiledRun, site: Frame | None) -> list[Finding]:
    out = []
    calls = [e for e in run.of_kind(RECOMPILE) if e.frame is not None]
    for e in run.of_kind(DYNAMIC_SHAPES):
        frame = e.frame or (calls[0].frame if calls else None) or site
        out.append(_at(finding("CG702", f"torch.compile {e.reason} (CUDA graphs per size){_context(site, frame)}"),
                       frame))
    worst = max((f.rerecords for f in run.functions), default=0)
    reasons = run.of_kind(RERECORD)
    if worst >= RERECORD_LIMIT:
        why = "; ".join(sorted({e.reason for e in reasons})) or "an input's address changed"
        frame = next((e.frame for e in reasons if e.frame), None) or site
        out.append(_at(finding("CG702", f"a compiled function re-recorded its CUDA graph {worst} times: {why}"
                                        f"{_context(site, frame)}"), frame))
    return out


def _code_name(fn: str) -> str:
    """`torch_dynamo_resume_in_scale_at_10` → "the code after line 10 of `scale`" (what follows a graph break)."""
    import re

    m = re.match(r"torch_dynamo_resume_in_(.+)_at_(\d+)$", fn)
    return f"the code after line {m.group(2)} of `{m.group(1)}` (after a graph break)" if m else f"`{fn}`"


def _context(site: Frame | None, frame: Frame | None) -> str:
    """The compile call as context when the finding points elsewhere (the call that passed the new input)."""
    if site is None or frame is None or (site.file, site.line) == (frame.file, frame.line):
        return ""
    import os

    return f" (compiled at {os.path.basename(site.file)}:{site.line})"


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
    return replace(f, file=frame.file, line=frame.line, source=frame.source or None, function=frame.function or None)
