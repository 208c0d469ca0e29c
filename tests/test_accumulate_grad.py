"""CG407: autograd's AccumulateGrad stream-mismatch warning, recorded by the GPU tracer at the `.backward()` line,
becomes a finding whose kind says what it predicts (checks/accumulate_grad.py); the real capture judges it. The
records are built by hand here (the warning itself needs a CUDA device: tests/gpu/test_dist_fsdp_gpu.py)."""

from __future__ import annotations

from cgtool.checks import run_checks
from cgtool.checks.verdict import judge
from cgtool.model.finding import CONFIRMED, GPU_TRACE, REFUTED
from cgtool.model.frame import Frame
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, ErrorRecord
from cgtool.model.rules import CAPTURE_FAILS, GPU_ONLY_RULES, MADE_BEFORE_WARMUP, RULE_BY_ID
from cgtool.model.trace import ACCUMULATE_GRAD_WARNING, ATEN, Iteration, OpRecord, Trace

S = "/x/train.py"


def trace_with_warning(phase: str, index: int) -> Trace:
    """A GPU trace of 3 warmup iterations and the capture; the warning in iteration (phase, index)."""
    frames = [Frame(S, 20, "step", "loss = model(x).square().mean()"), Frame(S, 21, "step", "loss.backward()")]
    its = [Iteration(i, "warmup", [OpRecord(ATEN, "aten.mm", frame=0, outer=0)]) for i in range(3)]
    its.append(Iteration(3, "capture", [OpRecord(ATEN, "aten.mm", frame=0, outer=0)]))
    target = next(it for it in its if it.phase == phase and it.index == index)
    target.ops.append(OpRecord(ACCUMULATE_GRAD_WARNING, "AccumulateGrad", frame=1, outer=1))
    return Trace(device="cuda:0", frames=frames, iterations=its)


def cg407(findings):
    return [f for f in findings if f.rule == "CG407"]


def test_warned_in_the_first_warmup_iteration_predicts_a_failed_capture():
    (f,) = cg407(run_checks(trace_with_warning("warmup", 0)))
    assert (f.file, f.line, f.severity, f.kind, f.origin) == (S, 21, "error", MADE_BEFORE_WARMUP, GPU_TRACE)
    assert f.predicts == CAPTURE_FAILS and "setup" in f.message and "AccumulateGrad node's stream" in f.message


def test_warned_later_is_a_warning_that_predicts_nothing():
    for phase, index in (("warmup", 2), ("capture", 3)):
        (f,) = cg407(run_checks(trace_with_warning(phase, index)))
        assert f.severity == "warning" and f.kind is None and f.predicts is None, f
        assert ("the capture" if phase == "capture" else "warmup iteration 2") in f.message


def test_no_warning_no_finding():
    t = trace_with_warning("warmup", 0)
    for it in t.iterations:
        it.ops = [op for op in it.ops if op.kind != ACCUMULATE_GRAD_WARNING]
    assert not cg407(run_checks(t))


def test_the_real_capture_judges_it():
    (f,) = cg407(run_checks(trace_with_warning("warmup", 0)))
    # torch 2.11 (H200): the capture ends in the generic error, at no line of the script
    failed = ErrorRecord("capture", "AcceleratorError", "CUDA error: operation failed due to a previous error "
                         "during capture", (), "cudaErrorStreamCaptureInvalidated")
    assert judge([f], CAPTURE_FAILED, failed, None)[0].evidence == CONFIRMED
    other = ErrorRecord("capture", "RuntimeError", "Cannot copy between CPU and CUDA tensors during CUDA graph "
                        "capture unless the CPU tensor is pinned", (Frame(S, 30, "step"),))
    assert judge([f], CAPTURE_FAILED, other, None)[0].evidence != CONFIRMED
    refuted = judge([f], CAPTURED, None, None)[0]
    assert refuted.evidence == REFUTED and refuted.severity == "info"


def test_the_rule_is_the_gpu_runs_own():
    assert "CG407" in GPU_ONLY_RULES and RULE_BY_ID["CG407"].category == "warmup"
