"""Two ways of running one step compared from identical starting state: the replay check's idea (capture/replay.py)
for a step run in pieces or with some submodules graphed. State tensors and the CUDA RNG state are snapshotted
before the first run and restored before the second, and so are the Python attributes of every object in setup's
state (capture/host_state.py: a module's call counter, a cache's lists); outputs and state are compared with tolerances by dtype."""

from __future__ import annotations

from typing import Any, Callable

from cgtool.capture.host_state import restore_attributes, save_attributes
from cgtool.capture.tensors import clone_tree, compare, restore, snapshot, state_tensors
from cgtool.model.report import ReplayCheck
from cgtool.script.contract import Args, ScriptRaised


def compare_runs(state: Args, eager: Callable[[], Any], other: Callable[[], Any], stream: Any, label: str,
                 what: str = "replay") -> ReplayCheck:
    """Run `eager`, then `other` from the same starting state (both on `stream`); compare what they produce."""
    import torch

    pairs = state_tensors((state.args, state.kwargs))
    start = snapshot(pairs)
    attributes = save_attributes((state.args, state.kwargs))
    rng = torch.cuda.get_rng_state()
    eager_out = clone_tree(_on(stream, eager, "replay-check"))
    eager_state = snapshot(pairs)
    restore_attributes(attributes)
    restore(pairs, start)
    torch.cuda.set_rng_state(rng)
    other_out = dict(clone_tree(_on(stream, other, "replay-check")))
    diffs = [compare(name, e, other_out[name]) for name, e in eager_out if name in other_out]
    diffs += [compare(name, e, t.detach()) for (name, t), e in zip(pairs, eager_state)]
    note = ""
    if len(other_out) != len(eager_out):
        note = f"eager returned {len(eager_out)} tensors, the {what} {len(other_out)}"
    if not diffs:
        return ReplayCheck("skipped", label, (), "the step returns no tensors and holds no state tensors to compare")
    ok = all(d.ok for d in diffs) and not note
    return ReplayCheck("match" if ok else "mismatch", label, tuple(diffs), note)


def _on(stream: Any, fn: Callable[[], Any], phase: str) -> Any:
    import torch

    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        try:
            out = fn()
        except ScriptRaised:
            raise
        except Exception as exc:
            raise ScriptRaised(phase, exc) from None
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return out
