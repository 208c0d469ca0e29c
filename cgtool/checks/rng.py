"""Random numbers from a generator the graph does not know (CG401).

A captured graph advances the default CUDA generator's offset on each replay; a generator the step
passes explicitly (`generator=g`) is not registered with the graph, and capture fails with
"Attempt to increase offset for a CUDA generator not in capture mode". Host (CPU) generators used for
host work are fine and not reported.
"""

from __future__ import annotations

from cgtool.checks.common import capture_iterations, finding_at_op
from cgtool.model.finding import Finding
from cgtool.model.trace import Trace


def check_rng(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    for it in capture_iterations(trace):
        for op in it.ops:
            d = op.detail
            if not d or d.get("generator") != "custom" or d.get("generator_device") != "device" or op.host:
                continue
            out.append(finding_at_op(trace, "CG401", op, f"`{op.name}` draws from a custom generator "
                                  "(`generator=`) that the graph does not know; capture fails with `Attempt to "
                                  "increase offset for a CUDA generator not in capture mode`"))
    return out
