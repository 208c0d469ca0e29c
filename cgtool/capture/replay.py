"""After capture: does replay compute what eager computes, step after step?

K consecutive steps (`--check-steps`, capture/compare_runs.py's DEFAULT_STEPS) run eager and replayed from identical
starting state (parameters, buffers, optimizer state, the CUDA RNG state and the Python side of setup's state are
snapshotted and restored; a rank's DTensors as their local shards) on the same fresh inputs; every output tensor and every state tensor is compared after
every step with tolerances by dtype and eager's own noise (capture/compare_runs.py, the comparator the pieces and
the module map use too). The first step that differs is reported, with its tensors.
"""

from __future__ import annotations

from typing import Any

from cgtool.capture.compare_runs import DEFAULT_STEPS, InputsRefused, compare_steps, inputs_label
from cgtool.capture.harness import Captured
from cgtool.capture.shards import ShardState, local_clone_tree
from cgtool.capture.tensors import copy_inputs
from cgtool.model.report import ReplayCheck


def check_replay(captured: Captured, index: int, steps: int = DEFAULT_STEPS) -> ReplayCheck:
    """Compare `steps` replays with eager on inputs(index), inputs(index + 1), ... (or the capture's inputs when
    there is no inputs()): the graph's part is to take each step's inputs into its static buffers and replay;
    the judging is compare_steps'."""
    session, static = captured.session, captured.static_inputs
    fresh = session.inputs_from(index, steps)

    def eager(inputs: Any) -> Any:
        return session.call(inputs if inputs is not None else static)

    def replay(inputs: Any) -> Any:
        if inputs is not None and static is not None:
            problems = copy_inputs((static.args, static.kwargs), (inputs.args, inputs.kwargs))
            if problems:
                raise InputsRefused("; ".join(problems))
        captured.graph.replay()
        return captured.static_output

    # a rank's state as local shards (DTensors under FSDP2 / tensor parallel: capture/shards.py); a replayed
    # output's collective wait is not in the graph, so its buffer is read as is
    shards = ShardState((captured.state.args, captured.state.kwargs))
    return compare_steps(captured.state, eager, replay, fresh, captured.stream,
                         inputs_label(session.script, index, steps), pairs=shards.pairs, clone_eager=local_clone_tree,
                         clone_other=lambda value: local_clone_tree(value, wait=False), skip=shards.replaced)
