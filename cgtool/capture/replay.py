"""After capture: does replay compute what eager computes?

The check runs eager and replay from identical starting state (parameters, buffers, optimizer state
and the CUDA RNG state are snapshotted and restored) on the same fresh inputs, then compares every
output tensor and every state tensor with tolerances by dtype.
"""

from __future__ import annotations

from typing import Any

from cgtool.capture.harness import Captured
from cgtool.capture.tensors import (
    OUTPUT_NOISE_LIMIT,
    STATE_NOISE_LIMIT,
    compare,
    copy_inputs,
    max_abs_diff,
    restore,
    rounding_noise,
    snapshot,
)
from cgtool.capture.shards import ShardState, local_clone_tree
from cgtool.model.report import ReplayCheck
from cgtool.script.contract import Script, ScriptRaised


def check_replay(script: Script, captured: Captured, device: Any, index: int) -> ReplayCheck:
    """Compare replay with eager on inputs(index) (or the capture's inputs when there is no inputs())."""
    import torch

    fresh = None
    if script.inputs is not None:
        try:
            fresh = script.call_inputs(index, device)
        except Exception as exc:
            raise ScriptRaised("inputs", exc) from None
        label = f"inputs({index}), fresh"
    else:
        label = "setup's values (the script has no inputs())"
    shards = ShardState((captured.state.args, captured.state.kwargs))  # local shards of DTensors (FSDP2, TP)
    pairs = shards.pairs
    start = snapshot(pairs)
    rng = torch.cuda.get_rng_state()
    stream = captured.stream

    def eager_from_start() -> tuple[list[tuple[str, Any]], list[Any]]:
        restore(pairs, start)
        torch.cuda.set_rng_state(rng)
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            try:
                out = script.call_step(captured.state, fresh if fresh is not None else captured.static_inputs)
            except Exception as exc:
                raise ScriptRaised("replay-check", exc) from None
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        return local_clone_tree(out), snapshot(pairs)

    # Eager twice from the starting state: what eager itself varies by (nondeterministic kernels) is the
    # floor replay is held to, beside the dtype's tolerance.
    eager_out, eager_state = eager_from_start()
    replaced = shards.replaced()  # gradients the step set to None and made again: not what the graph writes
    again_out, again_state = eager_from_start()
    again = dict(again_out)
    noise = {name: max_abs_diff(t, again[name]) for name, t in eager_out if name in again}
    state_noise = [max_abs_diff(a, b) for a, b in zip(eager_state, again_state)]
    # slack only for rounding: small against an output's values, or against how much the step moved a state tensor
    out_slack = {name: rounding_noise(noise.get(name, 0.0), max_abs_diff(t, t * 0), OUTPUT_NOISE_LIMIT)
                 for name, t in eager_out}
    state_slack = [rounding_noise(n, max_abs_diff(after, before), STATE_NOISE_LIMIT)
                   for n, after, before in zip(state_noise, eager_state, start)]

    # Replay from the same starting state.
    restore(pairs, start)
    torch.cuda.set_rng_state(rng)
    problems: list[str] = []
    if fresh is not None and captured.static_inputs is not None:
        problems = copy_inputs((captured.static_inputs.args, captured.static_inputs.kwargs),
                               (fresh.args, fresh.kwargs))
    if problems:
        return ReplayCheck("mismatch", label, (), "replay cannot take these inputs: " + "; ".join(problems))
    captured.graph.replay()
    torch.cuda.synchronize()
    replay_out = local_clone_tree(captured.static_output, wait=False)  # its collective's wait is not in the graph
    diffs = []
    replay_names = dict(replay_out)
    for name, e in eager_out:
        r = replay_names.get(name)
        if r is not None:
            diffs.append(compare(name, e, r, noise.get(name, 0.0), out_slack.get(name, 0.0)))
    for (name, t), e, n, slack in zip(pairs, eager_state, state_noise, state_slack):
        if name not in replaced:
            diffs.append(compare(name, e, t.detach(), n, slack))
    note = ""
    if len(replay_out) != len(eager_out):
        note = f"eager returned {len(eager_out)} tensors, the captured step {len(replay_out)}"
    if not diffs:
        return ReplayCheck("skipped", label, (), "the step returns no tensors and holds no state tensors to compare")
    ok = all(d.ok for d in diffs) and not note
    return ReplayCheck("match" if ok else "mismatch", label, tuple(diffs), note)
