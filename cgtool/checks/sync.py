"""Host-device synchronizations inside the step (CG101-CG104), and non-capturable optimizers (CG404).

The CPU run recognizes them by op and call (they are not syncs on a CPU), and by the sync table generated on a
GPU (an aten op and the arguments under which it syncs: `sync_when` in its detail); the GPU run adds the
warnings of torch.cuda.set_sync_debug_mode. A sync inside torch is blamed on the user's line that
called into torch, and named by the library function it happened in.
"""

from __future__ import annotations

from dataclasses import replace

from cgtool.checks.common import capture_iterations, finding_at
from cgtool.model.finding import CONFIRMED, GPU_TRACE, Finding
from cgtool.model.report_parts import ErrorRecord
from cgtool.model.rules import PYTHON_LEVEL, SYNC_DEBUG, is_secondary
from cgtool.model.trace import ATEN, CALL, SYNC_WARNING, OpRecord, Trace
from cgtool.trace import op_roles as R
from cgtool.trace.frame_table import describe_library_frame

_SYNC_EVENTS = {
    "sync-device": "`torch.cuda.synchronize()` waits for the GPU",
    "sync-stream": "`Stream.synchronize()` waits for the GPU",
    "sync-event": "`Event.synchronize()` waits for the GPU",
    "query-stream": "`Stream.query()` asks the GPU from the host whether the stream finished: during capture "
                    "the query invalidates the capture, which then fails when it ends (plain PyTorch on an H100: the "
                    "query returns, the `with torch.cuda.graph` exit raises `operation failed due to a previous error "
                    "during capture`)",
    "query-event": "`Event.query()` asks the GPU from the host whether the event completed: during capture the "
                   "query invalidates the capture, which then fails when it ends (plain PyTorch on an H100: the query "
                   "returns, the `with torch.cuda.graph` exit raises `operation failed due to a previous error during "
                   "capture`)",
    "elapsed-time": "`Event.elapsed_time()` reads GPU timestamps on the host (it waits for both events)",
}
_SCALER_HINT = ("Capture forward and backward only and run scaler.step(opt) and scaler.update() outside the graph "
                "(GradScaler checks for inf/NaN on the host).")


def check_sync(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    for it in capture_iterations(trace):
        ops = it.ops
        for k, op in enumerate(ops):
            if op.host:  # a host tensor's read waits for nothing: an optimizer's host step count (Adagrad) captures;
                continue  # torch's capture health check decides for the optimizers with a capturable flag
            f = _op_finding(trace, op, ops, k)
            if f is not None:
                unsure = (op.detail or {}).get("unsure")
                out.append(_undecided(f, unsure) if unsure else f)
    out += _event_findings(trace)
    return _without_redundant_warnings(out)


def _undecided(f: Finding, path: str) -> Finding:
    """A sync on a tensor the CPU run never saw made (trace/unseen_origin.py): whether it is on the GPU is for a GPU
    run to decide, so a warning that says so, not an error."""
    return replace(f, severity="warning", message=f"{f.message} — if `{path}` is on the GPU: the CPU analysis cannot "
                   f"tell, `{path}` was made where it does not look (another thread, a C extension); a GPU run decides")


def _op_finding(trace: Trace, op: OpRecord, ops: list[OpRecord], k: int) -> Finding | None:
    detail = op.detail or {}
    via = tuple(detail.get("via", ()))
    if op.kind == CALL:
        if detail.get("python_level"):
            return _in_library(trace, op, "CG101", _table_sync(op, detail["sync_when"], "in torch's Python code, "
                               "outside any aten op, "), via, kind=PYTHON_LEVEL)
        if op.name in R.EQUAL_CALLS and len(set(op.shapes[:2])) > 1:
            return None  # tensors of different sizes: equal answers False without reading them (CUDA too)
        if op.name in R.SCALAR_READ_CALLS:
            aten = _following_aten(ops, k, R.SCALAR_READ_ATEN)
            return _scalar_read(trace, op, R.SCALAR_READ_CALLS[op.name], aten, via)
        if op.name in R.TO_HOST_CALLS or detail.get("move") == "d2h":
            what = R.TO_HOST_CALLS.get(op.name) or f"`{op.name.replace('Tensor.', '.')}()` to the host"
            return _in_library(trace, op, "CG103", f"{what} copies a GPU tensor to the host and waits for it", via)
        return None
    if op.kind == ATEN:
        if detail.get("gpu_clean"):  # inside a call the sync table saw run clean on CUDA with these arguments
            return None
        if op.name == R.EQUAL_ATEN and len(set(op.shapes[:2])) > 1:
            return None  # tensors of different sizes: equal answers False without reading them (CUDA too)
        if op.name in R.SCALAR_READ_ATEN:
            return _scalar_read(trace, op, f"`{op.name}`", None, via)
        if (op.name in R.DATA_DEPENDENT_ATEN and not detail.get("fixed_size")) or detail.get("data_dependent"):
            return _in_library(trace, op, "CG102", f"`{op.name}` has an output size that depends on the data, "
                               "so the host must wait for the GPU to size it", via)
        if detail.get("bool_index"):
            return _in_library(trace, op, "CG102", f"boolean-mask indexing (`{op.name}` with a bool mask) has an output "
                               "size that depends on the data (it calls nonzero), so the host waits for the GPU", via)
        if detail.get("move") == "d2h":
            return _in_library(trace, op, "CG103", f"`{op.name}` copies a GPU tensor to the host", via)
        if detail.get("sync_when"):
            return _in_library(trace, op, "CG101", _table_sync(op, detail["sync_when"]), via)
        return None
    if op.kind == SYNC_WARNING:
        return finding_at(trace, "CG101", op.frame, "a synchronizing CUDA operation runs here "
                          "(reported by torch.cuda.set_sync_debug_mode)", kind=SYNC_DEBUG)
    return None


def sync_at_capture_failure(trace: Trace, record: ErrorRecord) -> list[Finding]:
    """GPU run: a capture that failed at a line where an op runs that synchronizes on CUDA by the sync table (a
    sync that sync debug mode did not report in the warmup: a library's own copy or stream wait) is that sync,
    CG101 with the capture's error as evidence, not a generic capture error (CG501)."""
    frame = record.user_frame
    if frame is None:
        return []
    for it in reversed(capture_iterations(trace)):
        for op in reversed(it.ops):
            when = (op.detail or {}).get("table_sync")
            if when is None:
                continue
            f = finding_at(trace, "CG101", op.frame, "")
            if (f.file, f.line) != (frame.file, frame.line):
                continue
            error = f"{record.cuda_error + ': ' if record.cuda_error else ''}{record.message}"
            f = _in_library(trace, op, "CG101", f"{_table_sync(op, when)}; the capture failed here: {error[:300]}",
                            tuple((op.detail or {}).get("via", ())))
            return [replace(f, evidence=CONFIRMED, origin=GPU_TRACE)]
    return []


def _table_sync(op: OpRecord, when: str, where: str = "") -> str:
    """The message of a sync the sync table names: "`aten.isin` synchronizes with the GPU on CUDA when ... (sync table
    of torch 2.11.0)"; `where` goes before the condition (the Python-level entries' "in torch's Python code, ...")."""
    words = "with any arguments" if when == "always" else f"when {when}"
    return (f"`{op.name}` synchronizes with the GPU on CUDA {where}{words} (sync table of torch "
            f"{(op.detail or {}).get('sync_table')})")


def _following_aten(ops: list[OpRecord], k: int, names: frozenset[str]) -> str | None:
    """The aten op that a call ran (the next few records of the same frame)."""
    for op in ops[k + 1:k + 6]:
        if op.frame != ops[k].frame:
            break
        if op.kind == ATEN and op.name in names:
            return op.name
    return None


def _scalar_read(trace: Trace, op: OpRecord, what: str, aten: str | None, via: tuple[str, ...]) -> Finding:
    suffix = f" ({aten})" if aten else ""
    return _in_library(trace, op, "CG101", f"{what} reads a GPU value on the host{suffix}", via)


def _in_library(trace: Trace, op: OpRecord, rule: str, message: str, via: tuple[str, ...],
                kind: str | None = None) -> Finding:
    """A sync at the user's line; when it happened inside a library, name the innermost library frame
    that issued it (not the wrappers on the way), and recognize the optimizer (not capturable: CG404) and
    GradScaler (steps on the host): those are findings of their own, without `kind`."""
    if not via:
        return finding_at(trace, rule, op.frame, message, kind=kind)
    where = describe_library_frame(via[-1])
    if any("torch/optim/" in v for v in via):
        return _optimizer(trace, op, via, where)
    if any("grad_scaler.py" in v for v in via):
        return replace(finding_at(trace, "CG101", op.frame, f"GradScaler reads a GPU value on the host (`{op.name}` in "
                       f"{where}): it checks found_inf on the host before stepping", hint=_SCALER_HINT), library=where)
    package = via[-1].split("/", 1)[0].split(":", 1)[0]
    return replace(finding_at(trace, rule, op.frame, f"{message}, inside {package} ({where})", kind=kind),
                   library=where)


def is_optimizer_host_read(op: OpRecord) -> bool:
    """An optimizer reading its step count from a host tensor: the mark of capturable=False."""
    via = (op.detail or {}).get("via", ())
    return op.kind == CALL and op.name in R.SCALAR_READ_CALLS and any("torch/optim/" in v for v in via)


# torch.optim optimizers with no `capturable` argument, by file
_NO_CAPTURABLE_MODE = {"lbfgs.py": "LBFGS", "sparse_adam.py": "SparseAdam"}


def _optimizer(trace: Trace, op: OpRecord, via: tuple[str, ...], where: str) -> Finding:
    module = next((v.split(":")[0] for v in reversed(via) if "torch/optim/" in v and "optimizer.py" not in v),
                  "torch/optim")
    name = _NO_CAPTURABLE_MODE.get(module.rsplit("/", 1)[-1])
    if name is not None:  # no flag makes it capturable: say so, not "use capturable=True"
        return replace(finding_at(trace, "CG404", op.frame, f"{name} reads a GPU value on the host (`{op.name}` in "
                                  f"{where}) and has no capturable mode: its step() cannot be captured"),
                       hint=f"Capture forward and backward only and call {name}'s step() outside the graph, or use an "
                            "optimizer with capturable=True (Adam, AdamW, SGD, ...).")
    return finding_at(trace, "CG404", op.frame, f"the optimizer ({module}) reads a GPU value on the host (`{op.name}` in "
                      f"{where}): without capturable=True it cannot be captured (PyTorch "
                      "raises `Attempting CUDA graph capture of step() ... capturable is False`)")


def _event_findings(trace: Trace) -> list[Finding]:
    out = []
    captured = {it.index for it in capture_iterations(trace)}
    for ev in trace.events:
        if ev.iteration in captured and ev.kind in _SYNC_EVENTS:
            rule = "CG105" if ev.kind.startswith("query-") else "CG104"
            out.append(finding_at(trace, rule, ev.frame, _SYNC_EVENTS[ev.kind]))
        elif ev.iteration in captured and ev.kind == "optimizer-check" and ev.target:
            groups = f"{ev.target} of its {ev.stream} param groups" if (ev.stream or 0) > 1 else "its param group"
            out.append(finding_at(trace, "CG404", ev.frame, f"the optimizer's step() runs torch's capture health check "
                                  f"and {groups} {'are' if ev.target > 1 else 'is'} not capturable=True: PyTorch "
                                  "raises `Attempting CUDA graph capture of step() ... capturable is False` (fused and "
                                  "foreach do not make an optimizer capturable)"))
    return out


def _without_redundant_warnings(findings: list[Finding]) -> list[Finding]:
    """A sync-debug warning, or a Python-level sync from the sync table (secondary kinds: model/rules.py), adds
    nothing where another sync finding names the same line."""
    named = {(f.file, f.line) for f in findings if not is_secondary(f)}
    return [f for f in findings if not is_secondary(f) or (f.file, f.line) not in named]
