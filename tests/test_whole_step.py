"""Issue 20: a failed GPU capture gets the CPU analysis of the whole step (cgtool/worker/whole_step.py). The GPU
report here is written by hand (the GPU run itself: tests/gpu/test_every_hazard_gpu.py); the CPU worker is real."""

import os

from cgtool.model.finding import CONFIRMED
from cgtool.model.frame import Frame
from cgtool.model.job import CAPTURE, CaptureSettings, Job
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, WORKER_FAILED, ErrorRecord, Report
from cgtool.model.rules import finding
from cgtool.worker.whole_step import complete_report, needs_whole_step

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "samples", "hazards", "multi", "mask_item_host.py")


def _gpu_report() -> Report:
    at = Frame(SCRIPT, 23, "step", "kept = y[y > 0]  # expect: CG102")
    report = Report(script=SCRIPT, entry="step", status=CAPTURE_FAILED, device="cuda")
    report.errors.append(ErrorRecord("capture", "RuntimeError", "operation not permitted when stream is capturing",
                                     (at,), "cudaErrorStreamCaptureUnsupported"))
    report.findings.append(finding("CG102", "boolean-mask indexing", file=SCRIPT, line=23, evidence=CONFIRMED))
    return report


def test_a_failed_capture_lists_what_comes_after_its_line():
    job = Job(CAPTURE, SCRIPT, "step", CaptureSettings(warmup=3, timing=False, checks=True))
    report = complete_report(job, _gpu_report(), timeout=300)
    got = [(f.rule, f.line, f.evidence) for f in report.findings]
    assert got == [("CG102", 23, "confirmed"), ("CG101", 24, "not-reached"), ("CG402", 25, "not-reached")], got
    assert all("the real capture stopped at line 23" in f.reason for f in report.findings[1:])


def test_only_a_failed_gpu_capture_needs_it():
    job = Job(CAPTURE, SCRIPT, "step", CaptureSettings(checks=True))
    report = _gpu_report()
    assert needs_whole_step(job, report)
    assert not needs_whole_step(Job(CAPTURE, SCRIPT, "step", CaptureSettings(checks=False)), report)
    assert not needs_whole_step(Job(CAPTURE, SCRIPT, "step", CaptureSettings(), force_cpu=True), report)
    report.status = CAPTURED
    assert not needs_whole_step(job, report)
    assert complete_report(job, report, timeout=1) is report  # nothing run


def test_a_worker_that_died_capturing_gets_the_whole_step_too():
    job = Job(CAPTURE, SCRIPT, "step", CaptureSettings(warmup=3, timing=False, checks=True))
    report = Report(script=SCRIPT, entry="step", status=WORKER_FAILED)  # device unknown: no report came back
    report.errors.append(ErrorRecord("capture", "crash", "The worker died (signal 6) during the capture phase."))
    assert needs_whole_step(job, report)
    got = [(f.rule, f.line, f.evidence) for f in complete_report(job, report, timeout=300).findings]
    assert got == [("CG102", 23, "not-reached"), ("CG101", 24, "not-reached"), ("CG402", 25, "not-reached")], got
    assert "stopped at its first failure" in report.findings[0].text


# ---- a failed capture that got past a line: refuted or untested there, not "not reached" --------------------

def _failure(passed: tuple[str, ...]) -> ErrorRecord:
    return ErrorRecord("capture", "RuntimeError", "operation failed due to a previous error during capture",
                       (Frame("s.py", 20, "step", "torch.cuda.synchronize()"),), "cudaErrorStreamCaptureInvalidated",
                       passed)


def test_a_capture_that_got_past_a_sync_line_refutes_it():
    from cgtool.checks.verdict import judge

    found = [finding("CG101", ".item()", file="s.py", line=10), finding("CG402", "host value", file="s.py", line=12),
             finding("CG104", "synchronize", file="s.py", line=20)]
    got = {f.line: f for f in judge(found, CAPTURE_FAILED, _failure(("s.py:10", "s.py:12")), None)}
    assert got[20].evidence == "confirmed"
    assert got[10].evidence == "refuted" and got[10].severity == "info"
    assert "ran this line without failing and failed later, at line 20" in got[10].text
    assert got[12].evidence == "untested"  # a replay hazard: a failed capture never replays
    # nothing at the failing line explains the failure: an earlier call may have invalidated the capture
    alone = judge(found[:2], CAPTURE_FAILED, _failure(("s.py:10", "s.py:12")), None)
    assert [f.evidence for f in alone] == ["untested", "untested"]
    # no lines passed (the failure had no user frame, or an older report): nothing refuted
    assert judge(found, CAPTURE_FAILED, _failure(()), None)[0].evidence == "untested"


def test_the_whole_step_marks_lines_the_capture_got_past():
    from cgtool.checks.verdict import complete_with_whole_step

    gpu = [finding("CG104", "synchronize", file="s.py", line=20, evidence=CONFIRMED)]
    cpu = [finding("CG101", ".item()", file="s.py", line=10), finding("CG406", "rebound", file="s.py", line=12),
           finding("CG104", "synchronize", file="s.py", line=20), finding("CG101", ".item()", file="s.py", line=30)]
    got = {f.line: f for f in complete_with_whole_step(gpu, cpu, _failure(("s.py:10", "s.py:12")))}
    assert [(n, f.evidence) for n, f in sorted(got.items())] == [
        (10, "refuted"), (12, "untested"), (20, "confirmed"), (30, "not-reached")]
    assert "not tested: the real capture ran this line and failed later, at line 20" in got[12].text
    assert "not reached: the real capture stopped at line 20" in got[30].text


def test_an_error_record_keeps_the_lines_passed():
    rec = _failure(("s.py:10",))
    assert ErrorRecord.from_json(rec.to_json()) == rec
    assert "passed" not in _failure(()).to_json()


def test_a_world_of_one_gets_the_whole_step_as_a_world_of_one():
    """A script written for ranks (plain lint or capture: one rank): its CPU analysis runs as one rank too."""
    script = os.path.join(ROOT, "tests", "data", "unseen_multi", "ranks_allreduce.py")
    at = Frame(script, 26, "step", "positive = y[y > 0]  # expect: CG102")
    report = Report(script=script, entry="step", status=CAPTURE_FAILED, device="cuda")
    report.errors.append(ErrorRecord("capture", "RuntimeError", "rank 0: operation not permitted when stream is "
                                     "capturing", (at,), "cudaErrorStreamCaptureUnsupported", (f"{script}:24",)))
    report.findings.append(finding("CG102", "boolean-mask indexing", file=script, line=26, evidence=CONFIRMED))
    job = Job(CAPTURE, script, "step", CaptureSettings(warmup=3, timing=False, checks=True))
    got = [(f.rule, f.line, f.evidence) for f in complete_report(job, report, 300, world_of_one=True).findings]
    assert got == [("CG102", 26, "confirmed"), ("CG402", 28, "not-reached"), ("CG101", 29, "not-reached")], got


def test_the_ranks_of_one_script_share_one_whole_step_each_judged_by_its_own_failure(monkeypatch):
    """`capture --nproc-per-node 2`: the CPU analysis runs once (a world of one) and joins every rank whose capture
    failed, each marked by that rank's own failure; a rank that captured is left as it is."""
    import cgtool.worker.whole_step as ws

    script = os.path.join(ROOT, "tests", "data", "unseen_multi", "ranks_allreduce.py")
    runs = []
    real = ws._whole_step
    monkeypatch.setattr(ws, "_whole_step", lambda *a: runs.append(a) or real(*a))

    def failed(line: int, source: str) -> Report:
        r = Report(script=script, entry="step", status=CAPTURE_FAILED, device="cuda")
        r.errors.append(ErrorRecord("capture", "RuntimeError", "operation not permitted when stream is capturing",
                                    (Frame(script, line, "step", source),), "cudaErrorStreamCaptureUnsupported"))
        return r

    rank0 = failed(26, "positive = y[y > 0]  # expect: CG102")
    rank0.findings.append(finding("CG102", "boolean-mask indexing", file=script, line=26, evidence=CONFIRMED))
    rank1 = failed(29, 'print("mean", positive.mean().item())  # expect: CG101')
    rank2 = Report(script=script, entry="step", status=CAPTURED, device="cuda")
    job = Job(CAPTURE, script, "step", CaptureSettings(warmup=3, timing=False, checks=True))
    ws.complete_reports(job, [rank0, rank1, rank2], 300, world_of_one=True)
    assert len(runs) == 1
    assert [(f.rule, f.line, f.evidence) for f in rank0.findings] == [
        ("CG102", 26, "confirmed"), ("CG402", 28, "not-reached"), ("CG101", 29, "not-reached")]
    marks = {(f.rule, f.line): f.evidence for f in rank1.findings}
    assert marks[("CG101", 29)] == "confirmed" and set(marks) == {("CG102", 26), ("CG402", 28), ("CG101", 29)}, marks
    assert rank2.findings == []


def test_a_step_calling_compiled_code_captured_by_cgtool_gets_the_whole_step():
    """torch.compile without CUDA graphs: cgtool captures the compiled code untraced, so its GPU findings are only
    the failure; the CPU analysis (compiled code run eagerly under the tracer) names every line."""
    from cgtool.model.compiled import CompiledRun

    script = os.path.join(ROOT, "tests", "data", "unseen_multi", "compiled_head.py")
    at = Frame(script, 26, "step", "bias = torch.tensor([0.01 * calls[0]], device=x.device)  # expect: CG402")
    report = Report(script=script, entry="step", status=CAPTURE_FAILED, device="cuda")
    report.errors.append(ErrorRecord("capture", "RuntimeError", "Cannot copy between CPU and CUDA tensors during "
                                     "CUDA graph capture unless the CPU tensor is pinned", (at,)))
    report.findings.append(finding("CG501", "capture failed", file=script, line=26))
    report.compiled = CompiledRun(mode="inductor: captured by cgtool, untraced", captured_by="cgtool")
    job = Job(CAPTURE, script, "step", CaptureSettings(warmup=3, timing=False, checks=True))
    assert needs_whole_step(job, report)
    got = [(f.rule, f.line, f.evidence) for f in complete_report(job, report, 300).findings]
    assert got == [("CG402", 26, "confirmed"), ("CG102", 27, "not-reached"), ("CG101", 28, "not-reached")], got
    report.compiled = CompiledRun(mode="reduce-overhead")  # torch.compile's own CUDA graphs: nothing to add
    assert not needs_whole_step(job, report)


def test_work_off_the_capturing_stream_is_confirmed_where_the_capture_failed_at_its_line():
    """H100, torch 2.11 (callD, tests/data/unseen_multi/accum_loop.py): an unforked side stream's `x.std()` failed
    the capture at its own line (`operation not permitted when stream is capturing`). CG201 predicts a wrong
    replay, but a failure at its line is that work refused: confirmed, and CG501 ("nothing explains it") goes."""
    from cgtool.checks.capture import check_capture_failure
    from cgtool.checks.verdict import judge

    failure = ErrorRecord("capture", "AcceleratorError", "CUDA error: operation not permitted when stream is capturing",
                          (Frame("s.py", 31, "step", "spread = x.std(dim=(0, 1))"),),
                          "cudaErrorStreamCaptureInvalidated", ("s.py:30",))
    found = [finding("CG201", "switches to stream 3 without forking it", file="s.py", line=30),
             finding("CG201", "`aten.std` runs on stream 3", file="s.py", line=31)]
    got = judge(found, CAPTURE_FAILED, failure, None)
    assert [f.evidence for f in got] == ["untested", "confirmed"]
    assert "the real capture failed at this line" in got[1].text
    assert check_capture_failure(failure, got) == []
    # the same failure at another line confirms nothing: CG501 stays the cause
    elsewhere = ErrorRecord("capture", "AcceleratorError", "x", (Frame("s.py", 40, "step", "y"),), None)
    assert all(f.evidence == "untested" for f in judge(found, CAPTURE_FAILED, elsewhere, None))
