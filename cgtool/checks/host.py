"""Host values that reach the GPU inside the step (CG402), and steps with no GPU work (CG502).

- Host-to-device copies: `torch.tensor(data, device=...)`, `.to(device)`/`.cuda()`/`copy_` of host tensors.
  A copy from a host tensor made in the step, or from pageable memory, is reported; a copy from a pinned
  buffer made in setup/inputs is the recommended pattern and is not.
- Python numbers passed to device ops that change between iterations (a counter, a schedule, an index):
  the graph keeps the number it saw at capture. Numbers that change the op's output shape are sizes:
  dynamic shapes (CG301).
"""

from __future__ import annotations

from cgtool.checks.common import alignments, capture_iterations, compared_iterations, finding_at, finding_at_op
from cgtool.checks.changing_numbers import changing_number, optim_source
from cgtool.checks.sync import is_optimizer_host_read
from cgtool.model.finding import Finding
from cgtool.model.rules import PAGEABLE_COPY, PYTHON_NUMBER, RULE_BY_ID
from cgtool.model.trace import ATEN, CALL, OpRecord, Trace
from cgtool.trace import op_roles as R

_PAGEABLE = f"capture fails: `{RULE_BY_ID['CG402'].kind(PAGEABLE_COPY).capture_error}`"  # type: ignore[union-attr]
_SYNC_NAMES = frozenset(R.SCALAR_READ_CALLS) | R.SCALAR_READ_ATEN | frozenset(R.TO_HOST_CALLS)


def check_host_copies(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    for it in capture_iterations(trace):
        for op in it.ops:
            d = op.detail
            if d and d.get("move") == "h2d":
                f = _copy_finding(trace, op, d)
                if f is not None:
                    out.append(f)
    return out


def _copy_finding(trace: Trace, op: OpRecord, d: dict) -> Finding | None:
    src, pinned = d.get("src"), d.get("pinned")
    if op.name in R.DATA_FACTORY_CALLS:
        what = f"`{op.name}(..., device=...)` copies Python data to the GPU every iteration"
    elif src == "step":
        what = f"`{op.name}` copies a host tensor made in the step to the GPU"
    else:
        origin = {"setup": " made in setup()", "inputs": " made in inputs()"}.get(src or "", "")
        what = f"`{op.name}` copies a{'' if pinned else ' pageable (not pinned)'} host tensor{origin} to the GPU"
    if src == "step":
        tail = "" if pinned else f"; {_PAGEABLE}"
        return finding_at_op(trace, "CG402", op, f"{what}: replay reuses the value from capture{tail}",
                             kind=None if pinned else PAGEABLE_COPY)
    if not pinned:
        return finding_at_op(trace, "CG402", op, f"{what}: {_PAGEABLE}", kind=PAGEABLE_COPY)
    return None


def check_host_scalars(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    syncs = {op.frame for it in trace.iterations for op in it.ops
             if op.name in _SYNC_NAMES and not op.host or is_optimizer_host_read(op)}
    for al in alignments(trace):
        for a, b in al.pairs:
            if a.kind != CALL or a.host or a.frame in syncs or a.shapes != b.shapes:
                continue
            sa, sb = (a.detail or {}).get("scalars"), (b.detail or {}).get("scalars")
            if sa is None or sb is None or _same(sa, sb):
                continue
            changed = [(x, y) for x, y in zip(sa, sb) if not _same(x, y)]
            if (a.detail or {}).get("out_shape") != (b.detail or {}).get("out_shape"):
                out.append(finding_at(trace, "CG301", a.frame, f"the size or slice passed to `{a.name}` changes "
                                      f"between iterations ({_show(changed)}); replay keeps the captured shapes"))
            else:
                source = optim_source(trace, a)
                message, hint = changing_number(trace, a, _show(changed), source)
                if source:  # torch.optim's own line is named beside the user's
                    out.append(finding_at_op(trace, "CG402", a, message, hint=hint, kind=PYTHON_NUMBER))
                else:
                    out.append(finding_at(trace, "CG402", a.frame, message, hint=hint, kind=PYTHON_NUMBER))
    return out


def _same(x: object, y: object) -> bool:
    return x == y or (x != x and y != y)  # NaN equals NaN here


def _show(changed: list[tuple[object, object]]) -> str:
    return ", ".join(f"{x!r} then {y!r}" for x, y in changed[:3])


def check_device_work(trace: Trace) -> list[Finding]:
    """A step that gives the GPU nothing to do captures an empty graph (warning)."""
    its = [it for it in capture_iterations(trace) if it.error is None and it.ops] or compared_iterations(trace)
    if not its or trace.tracer_error is not None:
        return []
    for it in its:
        if any(op.kind == ATEN and not op.host for op in it.ops):
            return []
    first = next((op for it in its for op in it.ops if op.frame >= 0), None)
    return [finding_at(trace, "CG502", first.outer if first else -1, "the step does no GPU work: every op works "
                       "on host tensors, so the captured graph would be empty")]
