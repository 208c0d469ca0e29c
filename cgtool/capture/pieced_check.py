"""The pieced step's replay check when it differs from eager: judged again against the same step compiled without
CUDA graphs, so torch.compile's own rounding is not taken for a CUDA-graph hazard.

torch.compile(step, backend="cudagraphs") runs the graphs dynamo and AOTAutograd make from the step, recorded as CUDA
graphs; those graphs may compute in another order than eager (an optimizer's bias correction on the GPU instead of
in Python), so the pieced step can differ from eager by more than eager differs from itself. backend="aot_eager"
runs the same graphs as plain kernels: the difference between it and the pieced step is the CUDA graphs' alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cgtool.model.report import ReplayCheck
from cgtool.script.errors import first_line

REFERENCE = 'the same step compiled without CUDA graphs (torch.compile(step, backend="aot_eager"))'
# Runs of the compiled reference after its first whose difference from it is the noise: a step whose eager runs
# jump apart at a random step (timm AdamW on an H100: at step 4 in three plain-PyTorch runs, not within 6 steps in
# cgtool's pair in two of four GPU runs) needs more than one pair to see it; each run is K steps of the step, cheap
# beside the compile the recheck already paid for
NOISE_RUNS = 4


def recheck_against_compiled(step: Any, fresh: list[Any], label: str, against_eager: ReplayCheck,
                             eager_noise: list[Any] | None = None) -> ReplayCheck:
    """`against_eager` (a mismatch) judged again: the pieced step against `REFERENCE` from the same state on the same
    inputs. `step`: capture/pieces.PiecedStep; `eager_noise`: what eager twice varied by in the first check, taken
    with the compiled reference's own (the same step's nondeterminism: AdamW's amplified rounding jumps apart at a
    random step, and two pairs of runs see it more often than one). What the compiled reference (or the pieced step
    again) raises leaves the eager verdict, with why. Run after the pieced step is timed: the reference's dynamo cache entries sit on the same
    code objects and count toward dynamo's recompile limit, which a recompile of the pieced step while timed must not
    meet."""
    import torch

    from cgtool.capture.compare_runs import compare_steps
    from cgtool.capture.pieces import PiecedStepFailed

    session = step.eager.with_script(dataclasses.replace(step.eager.script, step=torch.compile(
        step.eager.script.step, backend="aot_eager")))

    def run_compiled(inputs: Any) -> Any:
        return session.call(step.static_inputs if inputs is None else inputs)

    step.now = f"on {label} (the replay check against the compiled step without CUDA graphs)"
    try:
        against_compiled = compare_steps(step.state, run_compiled, step.run_pieced, fresh, step.stream, label,
                                         what="pieced step", noise_also=eager_noise or None, noise_runs=NOISE_RUNS)
    except PiecedStepFailed as failed:  # the first check ran the pieced step on these inputs: keep what it found
        return unresolved(against_eager, f"the pieced step raised {type(failed.exc).__name__}: "
                          f"{first_line(str(failed.exc))[:200]}")
    except Exception as exc:  # noqa: BLE001 - the reference could not run: the eager verdict stands, with why
        cause = getattr(exc, "exc", exc)  # ScriptRaised wraps what the compiled step raised
        return unresolved(against_eager, f"{type(cause).__name__}: {first_line(str(cause))[:200]}")
    return judged(against_eager, against_compiled)


def judged(against_eager: ReplayCheck, against_compiled: ReplayCheck) -> ReplayCheck:
    """The verdict of the two checks: the pieced step matches the compiled step without graphs → a match judged
    against that step, the difference from eager named as torch.compile's; else the eager mismatch, saying the
    compiled step without graphs does not explain it."""
    if against_compiled.status == "match":
        bad = ", ".join(f"`{d.name}`" for d in against_eager.tensors if not d.ok)
        why = (f"differs from eager from step {against_eager.first_differing_step} of {against_eager.steps} (max abs "
               f"{against_eager.max_abs:.3g}{': ' + bad if bad else ''}), and matches {REFERENCE} over "
               f"{against_compiled.steps} step(s): the difference from eager is torch.compile's own, not the CUDA "
               "graphs'")
        return dataclasses.replace(against_compiled, reference=REFERENCE,
                                   note="; ".join(x for x in (why, against_compiled.note) if x))
    at = against_compiled.first_differing_step
    why = (f"{REFERENCE} does not explain it: the pieced step differs from that too"
           + (f" (step {at}, max abs {against_compiled.max_abs:.3g})" if against_compiled.status == "mismatch" else
              f" ({against_compiled.status}: {against_compiled.note})"))
    return dataclasses.replace(against_eager, note="; ".join(x for x in (against_eager.note, why) if x))


def unresolved(against_eager: ReplayCheck, error: str) -> ReplayCheck:
    """The eager mismatch, noting that the compiled step without CUDA graphs could not be run to tell them apart."""
    why = f"{REFERENCE} could not run to tell torch.compile's own difference from the graphs' ({error})"
    return dataclasses.replace(against_eager, note="; ".join(x for x in (against_eager.note, why) if x))
