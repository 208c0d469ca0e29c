"""Random numbers the graph cannot replay as eager draws them: a generator the graph does not know (CG401), and
an RNG reseeded or its state set inside the step (CG405).

A captured graph advances the default CUDA generator's offset on each replay; a generator the step
passes explicitly (`generator=g`) is not registered with the graph, and capture fails with
"Attempt to increase offset for a CUDA generator not in capture mode". Host (CPU) generators used for
host work are fine and not reported.

`torch.manual_seed(...)`, `set_rng_state`, `fork_rng` in the step run on the host: eager resets the generator
every iteration (dropout draws the same mask each time), replay does not run them, so its draws move on. The
Tracer's state watch records these calls (`detail["rng"]`) at the user's line, torch's own save-and-restore
(checkpointing) left out.
"""

from __future__ import annotations

from cgtool.checks.common import capture_iterations, finding_at_op, quote
from cgtool.model.finding import Finding
from cgtool.model.rules import RULE_BY_ID
from cgtool.model.trace import ATEN, OpRecord, Trace

# aten ops (packet names) that draw from a generator.
RANDOM_ATEN = frozenset({
    "aten.native_dropout", "aten._fused_dropout", "aten.bernoulli", "aten.bernoulli_", "aten.rand", "aten.randn",
    "aten.rand_like", "aten.randn_like", "aten.randint", "aten.randint_like", "aten.randperm", "aten.normal",
    "aten.normal_", "aten.uniform_", "aten.exponential_", "aten.geometric_", "aten.cauchy_", "aten.log_normal_",
    "aten.random_", "aten.multinomial", "aten.poisson", "aten.binomial", "aten._standard_gamma",
    "aten._sample_dirichlet", "aten.rrelu_with_noise", "aten.rrelu_with_noise_",
})
_WHAT = {"seed": "reseeds the RNG", "state": "sets the RNG state", "fork": "forks the RNG state (and restores it)"}


def check_rng(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    for it in capture_iterations(trace):
        for op in it.ops:
            d = op.detail
            if not d or d.get("generator") != "custom" or d.get("generator_device") != "device" or op.host:
                continue
            out.append(finding_at_op(trace, "CG401", op, f"`{op.name}` draws from a custom generator "
                                  "(`generator=`) that the graph does not know; capture fails with "
                                  f"`{RULE_BY_ID['CG401'].capture_error}`"))
    return out


def check_rng_reset(trace: Trace) -> list[Finding]:
    """CG405: RNG calls in the step; an error when the step draws device random numbers from the default
    generator, a warning when it draws none (the reset still differs for what runs after the step)."""
    out: list[Finding] = []
    for it in capture_iterations(trace):
        draws = [op for op in it.ops if _default_draw(op)]
        for op in it.ops:
            kind = op.detail.get("rng") if op.detail else None
            if kind is None:
                continue
            call = f"`{op.name}` {_WHAT.get(kind, 'resets the RNG')} inside the step"
            if draws:
                first = draws[0]
                message = (f"{call}: eager resets the generator every iteration, so `{first.name}` at "
                           f"{quote(trace, first.frame)} draws the same numbers each time; a CUDA graph does not run "
                           "this call on replay and its draws move on with the generator's offset, so replay "
                           "differs from eager")
                out.append(finding_at_op(trace, "CG405", op, message))
            else:
                message = (f"{call}: the step draws no random numbers on the GPU, but a CUDA graph does not run this "
                           "call on replay, so the generator's state after a replay differs from eager's")
                out.append(finding_at_op(trace, "CG405", op, message, severity="warning"))
    return out


def _default_draw(op: OpRecord) -> bool:
    if op.kind != ATEN or op.host or op.name not in RANDOM_ATEN:
        return False
    return not op.detail or op.detail.get("generator") != "custom"
