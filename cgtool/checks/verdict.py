"""The GPU run is ground truth: mark each finding of the trace confirmed, refuted or untested by what the
real capture and the replay check showed.

A finding predicts that capture fails (a sync, an unjoined stream, a non-capturable optimizer) or that replay
differs from eager (uncaptured work, host values, branches, shapes). When the real capture succeeded, a
capture-fails prediction was wrong; when replay on fresh inputs matched eager as well, a replay-differs
prediction was wrong too, unless the trace saw the difference itself between steady-state iterations (a
shape or a branch that really changes, a Python number that really changes): such a finding keeps its
severity. A refuted finding is kept, as info, so the user sees what the trace thought and why it was set aside.
"""

from __future__ import annotations

from dataclasses import replace

from cgtool.model.finding import CONFIRMED, NOT_REACHED, REFUTED, UNTESTED, Finding
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, ErrorRecord, ReplayCheck
from cgtool.model.rules import CAPTURE_FAILS, RULE_BY_ID, capture_error, seen_between_iterations


def _fails_at_its_line(f: Finding) -> bool:
    rule = RULE_BY_ID.get(f.rule)
    return rule is not None and rule.fails_at_its_line


def _refused_at_its_line(f: Finding) -> bool:
    rule = RULE_BY_ID.get(f.rule)
    return rule is not None and rule.refused_at_its_line


def judge(findings: list[Finding], status: str, failure: ErrorRecord | None,
          replay: ReplayCheck | None) -> list[Finding]:
    """`findings` with `evidence` set from the real run (status CAPTURED or CAPTURE_FAILED). A capture-fails
    finding is confirmed by a failed capture at its line, or by the failure's own words (the error its rule or
    kind names: model/rules.py, capture_error); refuted by a failed capture that got past its line (see
    `refuted_by_passing`)."""
    failed_at = {(fr.file, fr.line) for fr in failure.frames} if failure is not None else set()
    failure_text = f"{failure.message} {failure.cuda_error or ''}".lower() if failure is not None else ""
    out = []
    for f in findings:
        # what it predicts: its rule's prediction, or its kind's (a pageable host copy, an uncaptured dependency
        # predict a failed capture): model/rules.py
        if f.predicts is None or f.evidence is not None:
            out.append(f)
            continue
        out.append(_judged(f, f.predicts, status, failed_at, failure_text, replay))
    return refuted_by_passing(out, failure)


def refuted_by_passing(findings: list[Finding], failure: ErrorRecord | None) -> list[Finding]:
    """A failed capture that got past a line (ErrorRecord.passed) without failing there refutes a finding
    that says capture fails at that very call (Rule.fails_at_its_line), but only when a finding confirmed at the
    failing line explains the failure: a capture invalidated silently by an earlier call reports the error
    later (`operation failed due to a previous error during capture`) at a line that is not the cause."""
    if failure is None or not failure.passed or not any(f.evidence == CONFIRMED for f in findings):
        return findings
    passed = set(failure.passed)
    frame = failure.user_frame
    where = f"line {frame.line}" if frame is not None else "a later line"
    return [_refuted(f, f"the real capture ran this line without failing and failed later, at {where}")
            if f.evidence in (UNTESTED, NOT_REACHED) and _fails_at_its_line(f) and f"{f.file}:{f.line}" in passed
            else f for f in findings]


def _judged(f: Finding, predicts: str, status: str, failed_at: set, failure_text: str,
            replay: ReplayCheck | None) -> Finding:
    if status == CAPTURE_FAILED:
        error = capture_error(f) if predicts == CAPTURE_FAILS else None
        if predicts == CAPTURE_FAILS and ((f.file, f.line) in failed_at or
                                          (error is not None and error.lower() in failure_text)):
            return replace(f, evidence=CONFIRMED)
        if _refused_at_its_line(f) and (f.file, f.line) in failed_at:
            return replace(f, evidence=CONFIRMED, reason="here the driver refused it: the real capture failed at "
                           "this line")
        return replace(f, evidence=UNTESTED)
    if status != CAPTURED:
        return replace(f, evidence=UNTESTED)
    if predicts == CAPTURE_FAILS:
        return _refuted(f, "the real capture succeeded")
    # replay-differs: the replay check on fresh inputs decides
    if replay is None or replay.status not in ("match", "mismatch"):
        return replace(f, evidence=UNTESTED)
    if replay.status == "mismatch":
        return replace(f, evidence=CONFIRMED)
    if seen_between_iterations(f):
        return replace(f, evidence=UNTESTED, reason=f"replay matched eager on {replay.inputs}, but the trace saw "
                       "this change between steady-state iterations")
    return _refuted(f, f"the real capture succeeded and replay matched eager on {replay.inputs}")


def _refuted(f: Finding, why: str) -> Finding:
    severity = "info" if f.severity in ("error", "warning") else f.severity
    return replace(f, evidence=REFUTED, severity=severity, reason=why)


def complete_with_whole_step(found: list[Finding], whole_step: list[Finding], failure: ErrorRecord | None) -> list[Finding]:
    """A failed capture stops at its first failure, so the GPU trace misses what comes after: `found` (the GPU
    run's judged findings) plus each finding of the CPU analysis of the whole step (`whole_step`) that the GPU
    did not make at the same rule and line; one list in file/line order. An added finding that predicts the
    failure the capture met at its line is CONFIRMED (and CG501, "nothing explains it", goes); one at a line
    the capture got past (ErrorRecord.passed) is UNTESTED, or REFUTED where it says capture fails at that call
    (refuted_by_passing); every other one is NOT_REACHED. Observations of the real run (rules that predict
    nothing: CG403, CG501-CG503) come only from the GPU."""
    have = {(f.rule, f.file, f.line) for f in found}
    frame = failure.user_frame if failure is not None else None
    stop = f"line {frame.line}" if frame is not None else "its first failure"
    passed = set(failure.passed) if failure is not None else set()
    added = []
    new = [f for f in whole_step if (f.rule, f.file, f.line) not in have and f.predicts is not None]
    # only a CONFIRMED judgement is kept (refuted_by_passing, run by judge, never changes one)
    judged_all = judge(new, CAPTURE_FAILED, failure, None) if failure is not None else new
    for f, judged in zip(new, judged_all):
        if judged.evidence == CONFIRMED:
            added.append(judged)
        elif f"{f.file}:{f.line}" in passed:
            added.append(replace(f, evidence=UNTESTED, reason=f"the real capture ran this line and failed later, at "
                                 f"{stop}; found by the CPU analysis of the whole step"))
        else:
            added.append(replace(f, evidence=NOT_REACHED, reason=f"the real capture stopped at {stop}; found by the "
                                 "CPU analysis of the whole step"))
    if any(f.evidence == CONFIRMED for f in added):
        found = [f for f in found if f.rule != "CG501"]
    merged = refuted_by_passing([*found, *added], failure)
    return sorted(merged, key=lambda f: (f.file or "", f.line or 0, f.rule))
