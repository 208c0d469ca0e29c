"""CG407 (GPU run): backward reuses an AccumulateGrad node made on another stream. Autograd makes each leaf's
AccumulateGrad node once and keeps it while any autograd graph refers to it (a loss kept in the state, DDP's
reducer); the node runs on the stream it was made on, so backward makes that stream wait on the stream that
produced the gradient. PyTorch says so itself, once a process: "The AccumulateGrad node's stream does not match
the stream of the node that produced the incoming gradient" (the tracer records it at the `.backward()` line:
trace/sync_warnings.py).

Which stream: a warning in cgtool's first warmup iteration means the node predates the warmup — made in setup
(or at import), which cgtool runs on the default stream; capture then fails (measured, H200, torch 2.11: a loss
kept from a setup step, warmup on a side stream, `torch.cuda.graph` on that stream or its own: the capture ends
in cudaErrorStreamCaptureInvalidated, with no line). Later, the node came from an earlier iteration on another
stream the step chose: backward synchronizes with it, and the capture still works (measured likewise)."""

from __future__ import annotations

from cgtool.checks.common import finding_at
from cgtool.model.finding import Finding
from cgtool.model.rules import MADE_BEFORE_WARMUP
from cgtool.model.trace import ACCUMULATE_GRAD_WARNING, Trace

TORCH_SAYS = ("PyTorch: \"The AccumulateGrad node's stream does not match the stream of the node that produced the "
              "incoming gradient\"")


def check_accumulate_grad(trace: Trace) -> list[Finding]:
    warmups = [it.index for it in trace.iterations if it.phase == "warmup"]
    first = min(warmups) if warmups else None
    for it in trace.iterations:
        for op in it.ops:
            if op.kind != ACCUMULATE_GRAD_WARNING:
                continue
            if it.phase == "warmup" and it.index == first:
                return [finding_at(trace, "CG407", op.frame, (
                    "backward here reuses AccumulateGrad nodes made before the warmup (in setup, on the default "
                    "stream): an autograd graph made there is still alive (a loss kept in the state, a wrapper "
                    f"that holds the nodes), so backward makes the default stream wait on the stream that captures "
                    f"and the capture fails ({TORCH_SAYS})"), severity="error", kind=MADE_BEFORE_WARMUP)]
            where = "the capture" if it.phase == "capture" else f"warmup iteration {it.index}"
            return [finding_at(trace, "CG407", op.frame, (
                f"backward here (in {where}) reuses AccumulateGrad nodes made in an earlier iteration on another "
                "stream (the step switches streams, and an autograd graph outlives its iteration): backward "
                f"synchronizes with that stream ({TORCH_SAYS})"))]
    return []
