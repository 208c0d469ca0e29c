"""Steps whose state forbids calls without end: an integer state tensor that every call advances (a StaticCache's
write position, a ring buffer's index, a step count). Timing calls the step thousands of times in a row; a decode
step's counter then runs past its cache's length and the next write is out of range (a device-side assert, which
leaves the CUDA context unusable). So before timing, one eager call from the current state finds the counters
(its integer state tensors and Python attributes are put back afterwards), and the timed blocks each start from
that state with at most a bounded number of calls (bench/measure.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from cgtool.capture.host_state import Saved, restore_attributes, save_attributes
from cgtool.capture.tensors import restore, snapshot, state_tensors
from cgtool.script.contract import Args, ScriptRaised


@dataclass
class CounterGuard:
    """The counters one call advanced, their values to put back before each timed block, and the Python side of
    the state (eager calls may advance host counters too)."""

    names: tuple[str, ...]
    tensors: list[tuple[str, Any]]
    start: list[Any]
    attributes: Saved
    max_calls: int  # calls in a row known to be safe from the start (the replay check's steps, or warmup's)

    def reset(self) -> None:
        restore_attributes(self.attributes)
        restore(self.tensors, self.start)

    def message(self) -> str:
        shown = ", ".join(f"`{n}`" for n in self.names[:3]) + (f" and {len(self.names) - 3} more"
                                                             if len(self.names) > 3 else "")
        return (f"the step advances {shown} (an integer state tensor) at every call, so calls in a row carry it "
                f"further (past a static cache's length, the next write is out of range); each timed block runs at "
                f"most {self.max_calls} calls, from the state the check started from")


# torch's own counters that count and index nothing: BatchNorm's `num_batches_tracked` (read only as 1/n when its
# momentum is None). Timing a training step with BatchNorm in short blocks from a put-back state would change its
# numbers for nothing.
PURE_COUNTS = ("num_batches_tracked",)


def is_counter_kind(name: str, tensor: Any) -> bool:
    """An integer state tensor that could be a position or an index (not one of PURE_COUNTS)."""
    import torch

    if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
        return False
    return not name.endswith(PURE_COUNTS)


def find_counters(state: Args, call: Callable[[], Any], stream: Any, max_calls: int) -> CounterGuard | None:
    """One `call()` on `stream` from the current state: the integer state tensors it changed, or None. The
    integer tensors and the Python attributes are put back afterwards (float state moves, as one more step)."""
    import torch

    pairs = [(n, t) for n, t in state_tensors((state.args, state.kwargs)) if is_counter_kind(n, t)]
    if not pairs:
        return None
    before = snapshot(pairs)
    attributes = save_attributes((state.args, state.kwargs))
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        try:
            call()
        except Exception as exc:
            raise ScriptRaised("timing", exc) from None
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    moved = [i for i, ((_, t), b) in enumerate(zip(pairs, before)) if not torch.equal(t, b)]
    restore(pairs, before)
    restore_attributes(attributes)
    if not moved:
        return None
    return CounterGuard(tuple(pairs[i][0] for i in moved), [pairs[i] for i in moved], [before[i] for i in moved],
                        attributes, max(1, max_calls))
