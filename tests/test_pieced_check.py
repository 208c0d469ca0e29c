"""The pieced step's verdict when it differs from eager (capture/pieced_check.py): judged again against the same step
compiled without CUDA graphs. The GPU side (both checks run for real) is tests/gpu/test_piecewise_gpu.py."""

from cgtool.capture.pieced_check import REFERENCE, judged, unresolved
from cgtool.model.report import ReplayCheck, TensorDiff

LABEL = "inputs(4)..inputs(9), fresh: 6 consecutive step(s) from identical state"


def diff(name: str, max_abs: float, ok: bool) -> TensorDiff:
    return TensorDiff(name, (4, 4), "torch.float32", max_abs, max_abs, ok)


AGAINST_EAGER = ReplayCheck("mismatch", LABEL, (diff("output[0]", 0.0, True), diff("state.model.w", 3.2e-05, False)),
                            "step 3 of 6 differs (`state.model.w`)", steps=6, first_differing_step=3)


def test_a_match_against_the_compiled_step_is_a_match_judged_against_it_with_eager_difference_named():
    against_compiled = ReplayCheck("match", LABEL, (diff("output[0]", 0.0, True), diff("state.model.w", 0.0, True)),
                                   steps=6)
    got = judged(AGAINST_EAGER, against_compiled)
    assert got.status == "match" and got.reference == REFERENCE and got.max_abs == 0.0
    assert got.verdict == f"matches {REFERENCE}"
    assert "from step 3 of 6 (max abs 3.2e-05: `state.model.w`)" in got.note
    assert "the difference from eager is torch.compile's own, not the CUDA graphs'" in got.note
    back = ReplayCheck.from_json(got.to_json())
    assert back == got and got.to_json()["reference"] == REFERENCE


def test_a_difference_from_the_compiled_step_too_keeps_the_eager_mismatch():
    against_compiled = ReplayCheck("mismatch", LABEL, (diff("state.model.w", 0.28, False),), steps=6,
                                   first_differing_step=1)
    got = judged(AGAINST_EAGER, against_compiled)
    assert got.status == "mismatch" and got.reference == "" and got.tensors == AGAINST_EAGER.tensors
    assert got.verdict == "differs from eager"
    assert got.note.startswith(AGAINST_EAGER.note) and "(step 1, max abs 0.28)" in got.note


def test_a_reference_that_could_not_run_leaves_the_eager_mismatch_and_says_why():
    got = unresolved(AGAINST_EAGER, "RuntimeError: no kernel")
    assert got.status == "mismatch" and got.first_differing_step == 3
    assert "could not run" in got.note and "RuntimeError: no kernel" in got.note


def test_an_eager_check_writes_no_reference_key():
    assert "reference" not in AGAINST_EAGER.to_json()
    assert AGAINST_EAGER.verdict == "differs from eager"
    assert ReplayCheck("skipped", LABEL).verdict == "skipped against eager"
