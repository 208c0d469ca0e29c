"""The K-step comparator (capture/compare_runs.py) and the counter guard (capture/counters.py) on the CPU: torch.cuda's
RNG, stream and synchronize calls stood in by their CPU equivalents, so the comparison itself runs for real."""

from __future__ import annotations

import contextlib
import json

import pytest
import torch

from cgtool.capture.compare_runs import InputsRefused, compare_steps, inputs_label
from cgtool.capture.counters import find_counters
from cgtool.model.graph_memory import GraphMemory
from cgtool.model.report import ReplayCheck
from cgtool.render.units import fmt_graph_memory
from cgtool.script.contract import Args


class _Stream:
    def wait_stream(self, other: object) -> None:
        pass


@pytest.fixture
def cpu_cuda(monkeypatch: pytest.MonkeyPatch) -> _Stream:
    monkeypatch.setattr(torch.cuda, "get_rng_state", torch.get_rng_state)
    monkeypatch.setattr(torch.cuda, "set_rng_state", torch.set_rng_state)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: _Stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (10**10, 10**10))
    return _Stream()


class Counter:
    """A decode-like state: a weight, a device position counter, a Python call counter."""

    def __init__(self) -> None:
        self.w = torch.ones(3)
        self.pos = torch.zeros((), dtype=torch.long)
        self.calls = 0

    def step(self, x: torch.Tensor, wrong_at: int | None = None) -> torch.Tensor:
        self.w.mul_(1.2 if wrong_at is not None and int(self.pos) == wrong_at else 1.1)
        self.pos.add_(1)
        self.calls += 1
        return self.w * x + torch.rand(3)  # RNG too: restored before each run


def _inputs(k: int) -> list[Args]:
    return [Args((), {"x": torch.full((3,), float(i))}) for i in range(k)]


def test_every_step_matches_and_the_state_is_left_as_found(cpu_cuda: _Stream) -> None:
    c = Counter()
    state = Args((), {"c": c})
    r = compare_steps(state, lambda a: c.step(**a.kwargs), lambda a: c.step(**a.kwargs), _inputs(6), cpu_cuda, "x")
    assert (r.status, r.steps, r.first_differing_step) == ("match", 6, None)
    assert r.counters == ("state[1]['c'].pos",)
    assert int(c.pos) == 0 and c.calls == 0 and float(c.w[0]) == 1.0  # put back after the check


def test_the_first_differing_step_is_named_with_its_tensors(cpu_cuda: _Stream) -> None:
    c = Counter()
    state = Args((), {"c": c})
    r = compare_steps(state, lambda a: c.step(**a.kwargs), lambda a: c.step(**a.kwargs, wrong_at=2), _inputs(6),
                      cpu_cuda, "x")
    assert (r.status, r.first_differing_step, r.steps) == ("mismatch", 3, 6)
    assert {d.name for d in r.tensors if not d.ok} == {"output", "state[1]['c'].w"}
    assert r.note.startswith("step 3 of 6 differs")
    again = ReplayCheck.from_json(json.loads(json.dumps(r.to_json())))
    assert again == r


def test_inputs_the_other_way_refuses_are_a_mismatch_at_that_step(cpu_cuda: _Stream) -> None:
    c = Counter()

    def other(a: Args) -> torch.Tensor:
        if float(a.kwargs["x"][0]) == 4:
            raise InputsRefused("shape (2,) differs from the captured (3,)")
        return c.step(**a.kwargs)

    r = compare_steps(Args((), {"c": c}), lambda a: c.step(**a.kwargs), other, _inputs(6), cpu_cuda, "x")
    assert (r.status, r.first_differing_step) == ("mismatch", 5)
    assert "shape (2,)" in r.note


def test_eager_noise_from_the_second_step_is_what_eager_varies_by(cpu_cuda: _Stream) -> None:
    """Two eager runs that differ by a compounded amount from step 2 on (rounding at step 1): replay within 4x that
    matches; replay differing by more than 4x does not."""
    w = torch.ones(4)
    runs = {"n": 0}

    def eager(a: Args) -> torch.Tensor:
        jitter = 1e-7 * (runs["n"] % 2)  # the second eager run rounds differently
        w.mul_(1.5).add_(jitter + 10 * jitter * float(a.kwargs["x"][0]))
        return w.clone()

    def counted(fn):
        def run(a: Args) -> torch.Tensor:
            if float(a.kwargs["x"][0]) == 0:
                runs["n"] += 1
            return fn(a)
        return run

    def replay_off(scale: float):
        def run(a: Args) -> torch.Tensor:
            w.mul_(1.5).add_(scale * 1e-6 * float(a.kwargs["x"][0]))
            return w.clone()
        return run

    state = Args((), {"w": w})
    ok = compare_steps(state, counted(eager), replay_off(1.0), _inputs(4), cpu_cuda, "x")
    bad = compare_steps(state, counted(eager), replay_off(1e4), _inputs(4), cpu_cuda, "x")
    assert ok.status == "match", ok
    assert bad.status == "mismatch" and bad.first_differing_step == 2


def test_counter_guard_finds_the_counter_and_puts_it_back(cpu_cuda: _Stream) -> None:
    c = Counter()
    state = Args((), {"c": c})
    guard = find_counters(state, lambda: c.step(torch.ones(3)), cpu_cuda, 6)
    assert guard is not None and guard.names == ("state[1]['c'].pos",) and guard.max_calls == 6
    assert int(c.pos) == 0 and c.calls == 0  # the probe's call is undone for counters and Python attributes
    for _ in range(5):
        c.step(torch.ones(3))
    guard.reset()
    assert int(c.pos) == 0 and c.calls == 0
    assert "at most 6 calls" in guard.message()
    assert find_counters(Args((), {"w": torch.ones(2)}), lambda: None, cpu_cuda, 3) is None


def test_inputs_label_says_how_many_steps() -> None:
    class WithInputs:
        inputs = staticmethod(lambda i, d: {})

    assert inputs_label(WithInputs(), 4, 6) == "inputs(4)..inputs(9), fresh: 6 consecutive step(s) from identical state"
    assert "no inputs()" in inputs_label(object(), 4, 1)


def test_recipe_pool_in_the_report_and_the_console() -> None:
    mem = GraphMemory(2 * 2**20, 4096, 8, 4096, 138240, 34 * 2**20)
    assert mem.recipe_extra == 32 * 2**20
    assert GraphMemory.from_json(json.loads(json.dumps(mem.to_json()))) == mem
    text = fmt_graph_memory(mem)
    assert "holds 34.0 MiB (+32.0 MiB: cuBLAS makes a workspace" in text
    assert "recipe" not in fmt_graph_memory(GraphMemory(2 * 2**20, 0))


def test_a_chaotic_step_is_judged_by_its_divergence_as_a_whole() -> None:
    from cgtool.capture.compare_runs import within_divergence
    from cgtool.model.report import TensorDiff

    def d(name: str, err: float, noise: float, ok: bool) -> TensorDiff:
        return TensorDiff(name, (3,), "torch.float32", err, 1.0, ok, noise)

    # one tensor 5x its own noise, the run as a whole within 4x eager's own divergence: passes
    mixed = [d("a", 5e-3, 1e-3, False), d("b", 1e-2, 1e-2, True), d("c", 2e-2, 2e-2, True)]
    assert all(x.ok for x in within_divergence(mixed))
    # the run as a whole far beyond eager's own divergence: stays a mismatch
    far = [d("a", 1.0, 1e-3, False), d("b", 1e-2, 1e-2, True)]
    assert not within_divergence(far)[0].ok
    # a tensor eager repeated exactly (no noise) that differs: never excused
    exact = [d("a", 1e-3, 0.0, False), d("b", 1e-2, 1e-2, True)]
    assert not within_divergence(exact)[0].ok


def test_batchnorm_counts_are_no_counter_to_guard(cpu_cuda: _Stream) -> None:
    """BatchNorm's num_batches_tracked counts and indexes nothing: a training step with BatchNorm keeps bench's
    ordinary blocks."""
    bn = torch.nn.BatchNorm1d(3).train()
    state = Args((), {"bn": bn})
    assert find_counters(state, lambda: bn(torch.randn(4, 3)), cpu_cuda, 6) is None
    r = compare_steps(state, lambda a: bn(torch.randn(4, 3)), lambda a: bn(torch.randn(4, 3)), [None, None],
                      cpu_cuda, "x")
    assert r.counters == ()


def test_the_check_steps_default_is_one_constant():
    """--check-steps' default was written twice (the option's `default=6` and compare_runs.DEFAULT_STEPS = 6): one
    constant, model/job.CHECK_STEPS (the settings' default), all read."""
    from cgtool.capture import compare_runs
    from cgtool.commands.capture import capture
    from cgtool.model.job import CHECK_STEPS, CaptureSettings
    from cgtool.model.limits import LIMITS

    option = next(p for p in capture.params if p.name == "check_steps")
    assert option.default is CHECK_STEPS and compare_runs.DEFAULT_STEPS is CHECK_STEPS
    assert CaptureSettings().check_steps is CHECK_STEPS
    assert LIMITS["check_steps"].low <= CHECK_STEPS <= LIMITS["check_steps"].high


def _jumps(w: torch.Tensor, calls: dict[str, int], at: int, by: float, runs_before: int, jitter: float = 0.0):  # noqa: ANN202
    """A step that multiplies `w`; from the run after `runs_before` on, it adds `by` at step `at` (0-based) and
    `jitter` at step 0 (rounding that can be amplified)."""
    def run(a: Args) -> torch.Tensor:
        step = int(float(a.kwargs["x"][0]))
        if step == 0:
            calls["n"] += 1
        later = calls["n"] > runs_before
        w.mul_(1.1).add_((by if step == at and later else 0.0) + (jitter if step == 0 and later else 0.0))
        return w.clone()
    return run


def test_a_jump_apart_at_a_random_step_is_noise_once_eager_differs_from_itself(cpu_cuda: _Stream) -> None:
    """Where a step amplifies rounding (AdamW near a zero second moment) the step at which runs jump apart is random:
    the second eager run rounds differently at step 1 and jumps at step 4, the other way jumps at step 3 by as much —
    within what eager varies by a step later (noise_envelope), a match; a hundred times more, a mismatch at step 3.
    The first step stays held to rounding."""
    w, calls = torch.ones(4), {"n": 0}
    state = Args((), {"w": w})
    eager = _jumps(w, calls, 3, 1e-3, 1, jitter=1e-6)
    results = []
    for other in (_jumps(w, calls, 2, 1e-3, -1), _jumps(w, calls, 2, 1e-1, -1), _jumps(w, calls, 0, 1e-3, -1)):
        calls["n"] = 0
        results.append(compare_steps(state, eager, other, _inputs(6), cpu_cuda, "x"))
    ok, bad, first = results
    assert ok.status == "match", ok
    assert bad.status == "mismatch" and bad.first_differing_step == 3, bad
    assert first.status == "mismatch" and first.first_differing_step == 1, first


def test_eager_that_repeated_exactly_so_far_allows_no_later_noise(cpu_cuda: _Stream) -> None:
    """Eager bit-identical through step 4, then its runs jump apart at step 6: a replay that differs at step 2 is not
    excused by that later noise, nor by noise more than two steps ahead."""
    w, calls = torch.ones(4), {"n": 0}
    state = Args((), {"w": w})
    eager = _jumps(w, calls, 5, 1e-2, 1)
    calls["n"] = 0
    r = compare_steps(state, eager, _jumps(w, calls, 1, 1e-3, -1), _inputs(6), cpu_cuda, "x")
    assert r.status == "mismatch" and r.first_differing_step == 2, r


def test_another_pair_of_runs_adds_the_jumps_this_pair_missed(cpu_cuda: _Stream) -> None:
    """A nondeterministic step jumps apart at a random step, and one pair of runs may not jump within K steps: the
    noise an earlier pair saw on the same step (noise_seen → noise_also) counts beside this pair's."""
    w, calls = torch.ones(4), {"n": 0}
    state = Args((), {"w": w})
    seen: list = []
    compare_steps(state, _jumps(w, calls, 3, 1e-3, 1, jitter=1e-6), _jumps(w, calls, 3, 1e-3, 1), _inputs(6),
                  cpu_cuda, "x", noise_seen=seen)
    assert len(seen) == 6 and max(seen[3][1].values()) > 5e-4  # the earlier pair jumped apart at step 4
    steady = _jumps(w, calls, 0, 0.0, 0)  # this pair repeats exactly: alone it allows nothing
    results = []
    for also in (None, seen):
        calls["n"] = 0
        results.append(compare_steps(state, steady, _jumps(w, calls, 2, 1e-3, -1), _inputs(6), cpu_cuda, "x",
                                     noise_also=also))
    alone, with_seen = results
    assert alone.status == "mismatch" and alone.first_differing_step == 3, alone
    assert with_seen.status == "match", with_seen


def test_more_noise_runs_see_a_jump_one_run_misses(cpu_cuda: _Stream) -> None:
    """noise_runs: the reference is run again several times; the most any run differs from it is the noise. Here only
    the third run after the reference jumps apart (at step 4): one run sees no noise, three see the jump."""
    w, calls = torch.ones(4), {"n": 0}
    state = Args((), {"w": w})

    def eager(a: Args) -> torch.Tensor:
        step = int(float(a.kwargs["x"][0]))
        if step == 0:
            calls["n"] += 1
        w.mul_(1.1).add_((1e-6 if step == 0 and calls["n"] > 1 else 0.0) + (1e-3 if step == 3 and calls["n"] == 4 else 0.0))
        return w.clone()

    results = []
    for runs in (1, 3):
        calls["n"] = 0
        results.append(compare_steps(state, eager, _jumps(w, calls, 2, 1e-3, -1, jitter=1e-6), _inputs(6), cpu_cuda,
                                     "x", noise_runs=runs))
    one, three = results
    assert one.status == "mismatch" and one.first_differing_step == 3, one
    assert three.status == "match", three
