"""Checks on the outcome of a real capture: a failed capture, an empty graph, replay versus eager."""

from __future__ import annotations

from cgtool.model.finding import CONFIRMED, GPU_CAPTURE, Finding
from cgtool.model.frame import Frame
from cgtool.model.report import ErrorRecord, Report
from cgtool.model.rules import finding


def _observed(rule: str, message: str, **fields: object) -> Finding:
    """A finding of the real capture itself (origin GPU_CAPTURE)."""
    return finding(rule, message, origin=GPU_CAPTURE, **fields)  # type: ignore[arg-type]


def check_capture_failure(record: ErrorRecord, found: list[Finding]) -> list[Finding]:
    """CG501 for a failed capture, unless an error finding already explains it.

    The trace usually names the root cause (a sync, an unjoined stream, ...) on the user's line; the
    driver's words ("operation failed due to a previous error during capture") stay in the report's
    errors. When nothing explains it, CG501 carries the CUDA error and the user frame active then.
    """
    frame = record.user_frame
    if any(f.evidence == CONFIRMED for f in found):
        return []
    if "capturable is False" in record.message:  # torch refused: the optimizer was made without capturable=True
        return [_observed("CG404", f"the optimizer is not capturable: PyTorch refused the capture ({record.message})",
                        **_at(frame), evidence=CONFIRMED)]
    if frame is None and any(f.severity == "error" for f in found):
        return []  # no line to compare with: the trace's error finding is the best explanation
    text = f"{record.cuda_error or ''} {record.message}"
    if any(k in text for k in ("CUBLAS_STATUS_NOT_INITIALIZED", "cudnnFind", "CUDNN_STATUS", "cublasCreate")):
        return [_observed("CG403", f"a library initialised itself inside capture: {record.message}",
                        file=frame.file if frame else None, line=frame.line if frame else None,
                        source=frame.source if frame else None, function=frame.function if frame else None)]
    cuda = f" ({record.cuda_error})" if record.cuda_error else ""
    return [_observed("CG501", f"capture failed{cuda}: {record.message}",
                    file=frame.file if frame else None, line=frame.line if frame else None,
                    source=frame.source if frame else None, function=frame.function if frame else None)]


def _at(frame: Frame | None) -> dict:
    if frame is None:
        return {}
    return {"file": frame.file, "line": frame.line, "source": frame.source, "function": frame.function}


def check_captured(report: Report, entry: Frame | None = None, first_op: Frame | None = None) -> list[Finding]:
    """CG502 (at the first op the step ran, else the entry's `def` line) and CG503 (at the `def` line:
    no single line is at fault for a replay that differs)."""
    out: list[Finding] = []
    at = _at(entry)
    empty_at = _at(first_op) or at
    if any(f.rule == "CG502" for f in report.findings):
        pass  # the trace already named the line
    elif report.graph is not None and not report.graph.nodes:
        out.append(_observed("CG502", "the captured graph is empty: step issued no GPU work on the capturing stream",
                           **empty_at))
    elif report.graph is not None and not any(n.kind not in ("empty",) for n in report.graph.nodes):
        out.append(_observed("CG502", "the captured graph holds only empty nodes: no kernels or copies were captured",
                           **empty_at))
    replay = report.replay
    if replay is not None and replay.status == "mismatch":
        bad = [t for t in replay.tensors if not t.ok]
        worst = ", ".join(f"{t.name} (max abs {t.max_abs:.3g})" for t in bad[:3])
        detail = worst or replay.note
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        explained = [f for f in report.findings if f.severity == "error"]
        cause = f"; likely cause: {explained[0].rule} at line {explained[0].line}" if explained else ""
        step = (f" at step {replay.first_differing_step} of {replay.steps}"
                if replay.first_differing_step and replay.steps > 1 else "")
        out.append(_observed("CG503", f"replay differs from eager{step} on {replay.inputs}: {detail}{more}{cause}", **at))
    return out
