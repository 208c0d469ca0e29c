"""The one comparator of two ways of running a step: eager against graph replay (capture/replay.py), against the
step in pieces, against the step with some modules graphed. Both run K consecutive steps from identical starting
state: state tensors, the CUDA RNG state and the Python attributes of every object in setup's state
(capture/host_state.py: a module's call counter, a cache's lists) are snapshotted before and put back before each
run. Eager runs twice: what it varies by itself (nondeterministic kernels) is the noise the other run is allowed,
beside the dtype's tolerance (capture/tensors.py): at the first step only when it is rounding (small against the
values, or against the step's update), from the second on as measured (the first step's rounding, compounded; once
eager has differed from itself, the most it reached up to two steps later, noise_envelope), and there a step's noisy
tensors are judged together (within_divergence). The first step that differs is reported,
with its tensors."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable

from cgtool.capture.host_state import SavedState
from cgtool.capture.tensors import (
    NOISE_FACTOR,
    OUTPUT_NOISE_LIMIT,
    STATE_NOISE_LIMIT,
    clone_tree,
    compare,
    max_abs_diff,
    rounding_noise,
    snapshot,
)
from cgtool.model.job import CHECK_STEPS
from cgtool.model.report import ReplayCheck, TensorDiff
from cgtool.script.contract import Args, ScriptRaised

# Steps compared when the user does not say (--check-steps): enough for a training step's optimizer moments,
# momentum, scheduler, BatchNorm and step counters to move from step to step (the ResNet plan of issue 36 matched
# eager for two steps and differed from the third).
DEFAULT_STEPS = CHECK_STEPS  # model/job.py: the settings' default
# The eager reference keeps the state after every step; past this share of free GPU memory it keeps the last only
# (the outputs are still compared at every step).
STATE_MEMORY_SHARE = 0.5


class InputsRefused(Exception):
    """The other way cannot take a step's inputs (a captured graph: another shape, a Python value baked in)."""


# one step's eager noise: outputs' measured noise and allowed slack by name, state tensors' the same (None: not kept)
Slack = tuple[dict[str, float], dict[str, float], list[float] | None, list[float] | None]


@dataclass
class _Step:
    outputs: list[tuple[str, Any]]
    state: list[Any] | None  # the state tensors after the step; None when not kept (memory)


def compare_steps(state: Args, eager: Callable[[Any], Any], other: Callable[[Any], Any], inputs: list[Any],
                  stream: Any, label: str, what: str = "replay", pairs: list[tuple[str, Any]] | None = None,
                  clone_eager: Callable[[Any], list[tuple[str, Any]]] = clone_tree,
                  clone_other: Callable[[Any], list[tuple[str, Any]]] = clone_tree,
                  skip: Callable[[], set[str]] | None = None, noise_seen: list[Slack] | None = None,
                  noise_also: list[Slack] | None = None, noise_runs: int = 1) -> ReplayCheck:
    """Run `eager(inputs[k])` for every k, from the starting state, twice; then `other(inputs[k])` from the same
    state; compare outputs and state after every step. All runs on `stream`. `pairs`: the state tensors (default
    every tensor reachable from `state`; a rank's local shards, say); `clone_eager`/`clone_other`: a step's output
    as named clones; `skip()`, asked after the first eager run: state names not to compare (gradients the step
    replaced). `noise_seen`, when given, receives what the two eager runs varied by at each step; `noise_also` is
    what another pair of runs of the same step on the same inputs varied by (an earlier check's `noise_seen`), taken
    with this pair's, step by step: two pairs see a nondeterministic step jump apart more often than one.
    `noise_runs`: eager runs after the reference whose difference from it is the noise (the most of them)."""

    saved = SavedState.of(state, pairs)
    pairs, start, from_start = saved.pairs, saved.tensors, saved.restore
    keep_every = _state_fits(start, len(inputs))

    try:
        reference: list[_Step] = []
        for k, inp in enumerate(inputs):
            out = clone_eager(_on(stream, partial(eager, inp), "replay-check"))
            last = k == len(inputs) - 1
            reference.append(_Step(out, snapshot(pairs) if keep_every or last or k == 0 else None))
        skipped = skip() if skip is not None else set()
        counters = advancing_counters(pairs, start, reference[0].state)
        if not keep_every and len(reference) > 1:
            reference[0].state = None
        slack: list[Slack] = []
        for _ in range(max(1, noise_runs)):  # more runs see a nondeterministic step jump apart more often
            from_start()
            run = _eager_noise(pairs, start, reference, eager, inputs, stream, clone_eager)
            slack = [_wider(a, b) for a, b in zip(slack, run)] if slack else run
        if noise_seen is not None:
            noise_seen[:] = slack
        if noise_also is not None and len(noise_also) == len(slack):
            slack = [_wider(a, b) for a, b in zip(slack, noise_also)]
        slack = noise_envelope(slack)
        from_start()
        result = _other_steps(pairs, reference, slack, other, inputs, stream, label, what, counters, clone_other,
                              skipped)
    except BaseException:
        _quietly(from_start)  # a step that raised: its error matters, not a failed restore after it
        raise
    from_start()  # the check leaves the state as it found it (timing starts from the checked state)
    return result


def _other_steps(pairs: list[tuple[str, Any]], reference: list[_Step], slack: list[Any], other: Callable[[Any], Any],
                 inputs: list[Any], stream: Any, label: str, what: str, counters: tuple[str, ...],
                 clone: Callable[[Any], list[tuple[str, Any]]], skipped: set[str]) -> ReplayCheck:
    """The other way's steps, each compared with eager's as it comes; the first that differs ends the run."""
    worst: dict[str, TensorDiff] = {}
    first_bad: list[TensorDiff] | None = None
    first = None
    note = ""
    for k, inp in enumerate(inputs):
        try:
            got = dict(clone(_on(stream, partial(other, inp), "replay-check")))
        except InputsRefused as refused:
            return ReplayCheck("mismatch", label, (), f"{what} cannot take the inputs of step {k + 1}: {refused}",
                               steps=len(inputs), first_differing_step=k + 1, counters=counters)
        ref, (noise, out_slack, state_noise, state_slack) = reference[k], slack[k]
        diffs = [compare(n, e, got[n], noise.get(n, 0.0), out_slack.get(n, 0.0)) for n, e in ref.outputs if n in got]
        if ref.state is not None and state_noise is not None and state_slack is not None:
            diffs += [compare(n, e, t.detach(), sn, sl)
                      for (n, t), e, sn, sl in zip(pairs, ref.state, state_noise, state_slack) if n not in skipped]
        if k > 0:
            diffs = within_divergence(diffs)
        if len(got) != len(ref.outputs):
            note = f"step {k + 1}: eager returned {len(ref.outputs)} tensors, the {what} {len(got)}"
        for d in diffs:
            if d.name not in worst or d.max_abs > worst[d.name].max_abs:
                worst[d.name] = d
        if note or not all(d.ok for d in diffs):
            first, first_bad = k + 1, diffs
            break
    steps = len(inputs)
    if first is None and not worst:
        return ReplayCheck("skipped", label, (), "the step returns no tensors and holds no state tensors to compare",
                           steps=steps, counters=counters)
    if first is not None:
        bad = ", ".join(f"`{d.name}`" for d in (first_bad or []) if not d.ok)
        note = "; ".join(x for x in (f"step {first} of {len(inputs)} differs" + (f" ({bad})" if bad else ""),
                                     note) if x)  # a note is only ever set at the step that ends the run
        return ReplayCheck("mismatch", label, tuple(first_bad or ()), note, steps=steps, first_differing_step=first,
                           counters=counters)
    return ReplayCheck("match", label, tuple(worst.values()), note, steps=steps, counters=counters)


def _eager_noise(pairs: list[tuple[str, Any]], start: list[Any], reference: list[_Step], eager: Callable[[Any], Any],
                 inputs: list[Any], stream: Any, clone: Callable[[Any], list[tuple[str, Any]]]) -> list[Slack]:
    """One more eager run from the start state against the reference run: per step, what they differ by (outputs by
    name, state tensors in order where the reference kept them) and the slack that allows."""
    slack: list[Slack] = []
    before = start
    for k, inp in enumerate(inputs):
        again = dict(clone(_on(stream, partial(eager, inp), "replay-check")))
        ref = reference[k]
        noise = {n: max_abs_diff(t, again[n]) for n, t in ref.outputs if n in again}
        # the first step's noise must be rounding (small against the values or the update); from the second step
        # on, two eager runs differ by that rounding compounded (a ResNet under SGD: by as much as a step moves a
        # weight, at step 2), and that difference is what eager itself varies by
        first = k == 0
        out_slack = {n: rounding_noise(noise.get(n, 0.0), max_abs_diff(t, t * 0), OUTPUT_NOISE_LIMIT) if first
                     else noise.get(n, 0.0) for n, t in ref.outputs}
        state_noise = state_slack = None
        if ref.state is not None:
            now = snapshot(pairs)
            state_noise = [max_abs_diff(a, b) for a, b in zip(ref.state, now)]
            state_slack = [rounding_noise(n, max_abs_diff(after, b), STATE_NOISE_LIMIT) if first else n
                           for n, after, b in zip(state_noise, ref.state, before)]
            before = ref.state
            del now
        slack.append((noise, out_slack, state_noise, state_slack))
    return slack


def _wider(a: Slack, b: Slack) -> Slack:
    """Two pairs' noise at one step, the larger of each (state lists only where both kept the same tensors)."""
    def most(x: dict[str, float], y: dict[str, float]) -> dict[str, float]:
        return {n: max(v, y.get(n, 0.0)) for n, v in x.items()}

    def most_list(x: list[float] | None, y: list[float] | None) -> list[float] | None:
        return [max(u, v) for u, v in zip(x, y)] if x is not None and y is not None and len(x) == len(y) else x

    return most(a[0], b[0]), most(a[1], b[1]), most_list(a[2], b[2]), most_list(a[3], b[3])


# How many steps past step k the eager noise allowed at step k may come from (noise_envelope)
NOISE_WINDOW = 2


def noise_envelope(slack: list[Slack]) -> list[Slack]:
    """From the second step on, once eager has differed from itself at some step up to k (there is rounding to
    amplify), a tensor's slack at step k is the most two eager runs differed by at steps 2..k+NOISE_WINDOW, not at step
    k alone: where a step amplifies rounding (AdamW dividing by the root of a second moment near zero) the step at which
    two runs jump apart is itself random — H100, timm AdamW, plain PyTorch, eager twice: 3.7e-09 at step 1, 7.5e-09 at
    step 3 and 1.5e-05 at step 4; the compared run jumped at step 3. A step before eager ever differed from itself
    keeps no slack, and the measured noise (noise_abs; within_divergence's "repeated exactly") stays the step's own."""
    def differed(s: Slack) -> bool:
        return any(v > 0 for v in s[0].values()) or any(v > 0 for v in s[2] or ())

    out = list(slack[:1])
    for k in range(1, len(slack)):
        noise, out_slack, state_noise, state_slack = slack[k]
        if not any(differed(s) for s in slack[:k + 1]):
            out.append(slack[k])
            continue
        window = slack[1:k + 1 + NOISE_WINDOW]
        wide_out = {n: max(s[1].get(n, 0.0) for s in window) for n in out_slack}
        wide_state = None if state_slack is None else [
            max([v] + [s[3][i] for s in window if s[3] is not None and i < len(s[3])])
            for i, v in enumerate(state_slack)]
        out.append((noise, wide_out, state_noise, wide_state))
    return out


def within_divergence(diffs: list[TensorDiff]) -> list[TensorDiff]:
    """From the second step on, in a step eager itself is not deterministic in (its kernels' rounding compounds: a
    ResNet-18 under SGD differs from itself by 0.38 at step 4), the tensors outside their own 4x-noise bound are
    judged together: they pass when the run as a whole diverges from eager by no more than NOISE_FACTOR times what
    eager diverges from itself (the root sum of squares of every noisy tensor's difference, against the same of its
    noise). A tensor eager repeated exactly is held to its own bound still."""
    import math

    failing = [d for d in diffs if not d.ok]
    if not failing or any(d.noise_abs <= 0 for d in failing):
        return diffs
    noisy = [d for d in diffs if d.noise_abs > 0 and math.isfinite(d.max_abs)]
    spread = math.sqrt(sum(d.noise_abs ** 2 for d in noisy))
    apart = math.sqrt(sum(d.max_abs ** 2 for d in noisy))
    if spread <= 0 or apart > NOISE_FACTOR * spread:
        return diffs
    return [replace(d, ok=True) if not d.ok else d for d in diffs]


def advancing_counters(pairs: list[tuple[str, Any]], start: list[Any], after: list[Any] | None) -> tuple[str, ...]:
    """The integer state tensors one eager step changed: counters (a static cache's write position, a step
    count). Repeated calls move them further, so a timed run may carry them past what the step allows."""
    if after is None:
        return ()
    import torch

    from cgtool.capture.counters import is_counter_kind

    return tuple(name for (name, t), a, b in zip(pairs, start, after) if is_counter_kind(name, t)
                 and not torch.equal(a, b))


def inputs_label(script: Any, first: int, steps: int) -> str:
    if getattr(script, "inputs", None) is None:
        return f"setup's values (the script has no inputs()), {steps} step(s)"
    return f"inputs({first})" + (f"..inputs({first + steps - 1})" if steps > 1 else "") + \
        f", fresh: {steps} consecutive step(s) from identical state"


def _state_fits(start: list[Any], steps: int) -> bool:
    import torch

    size = sum(t.numel() * t.element_size() for t in start)
    try:
        free, _ = torch.cuda.mem_get_info()
    except Exception:  # no figure: keep every step's state
        return True
    return size * steps <= STATE_MEMORY_SHARE * free


def _quietly(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - CUDA may be unusable after the error being raised
        pass


def _on(stream: Any, fn: Callable[[], Any], phase: str) -> Any:
    import torch

    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        try:
            out = fn()
        except (ScriptRaised, InputsRefused):
            raise
        except Exception as exc:
            raise ScriptRaised(phase, exc) from None
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return out
