"""The tracer's watch of host-side state (cgtool/trace/state_watch.py) and its rules: an RNG reseeded or its state
set inside the step (CG405), a state tensor rebound instead of updated in place (CG406). Small scripts in the
contract, run through the CPU analysis as `cgtool lint` runs them."""

from __future__ import annotations

import json
import textwrap

import pytest

torch = pytest.importorskip("torch")

from cgtool.model.trace import CALL, Trace  # noqa: E402
from cgtool.pipeline.cpu_analysis import analyze_on_cpu  # noqa: E402
from cgtool.script.contract import STEP_WATCHERS, load_script  # noqa: E402
from cgtool.trace.tracer import Tracer  # noqa: E402

HEAD = """\
import torch
import torch.nn.functional as F
from torch import nn
"""


def run(tmp_path, body: str, name: str = "script.py"):
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    trace, findings, errors = analyze_on_cpu(load_script(str(path)))
    assert not errors, errors
    assert trace.tracer_error is None
    return trace, findings, str(path)


def line_of(path: str, text: str) -> int:
    with open(path, encoding="utf-8") as fh:
        return next(n for n, line in enumerate(fh, 1) if text in line)


def rules_at(findings, rule: str) -> list[tuple[int, str]]:
    return [(f.line, f.severity) for f in findings if f.rule == rule]


# ---- CG405: RNG reseeds and state set inside the step ---------------------------------------------------

RESEED = """
def setup(device):
    torch.manual_seed(0)  # setup: fine
    return {"lin": nn.Linear(8, 8).to(device)}

def inputs(i, device):
    return {"x": torch.ones(4, 8, device=device)}

def step(lin, x):
    torch.manual_seed(1234)
    return F.dropout(lin(x), p=0.5, training=True)
"""


def test_reseed_in_the_step_is_an_error_at_its_line(tmp_path):
    trace, findings, path = run(tmp_path, RESEED)
    assert rules_at(findings, "CG405") == [(line_of(path, "torch.manual_seed(1234)"), "error")]
    f = next(f for f in findings if f.rule == "CG405")
    assert f.category == "rng" and "dropout" not in f.message.split(":")[0]
    assert "the same numbers each time" in f.message and "aten.bernoulli_" in f.message
    calls = [op for op in trace.iterations[-1].ops if op.detail and "rng" in op.detail]
    assert [(op.kind, op.name, op.detail["rng"], op.host) for op in calls] == [(CALL, "torch.manual_seed", "seed", True)]
    assert torch.manual_seed.__module__ == "torch.random" and not hasattr(torch.manual_seed, "_cgtool_rng")


def test_reseed_imported_before_the_tracer_and_cuda_state_calls(tmp_path):
    """`from torch import manual_seed` binds the real function before cgtool wraps anything: torch's own call of
    torch.cuda.manual_seed_all names the user's line. set_rng_state and fork_rng are reported too."""
    trace, findings, path = run(tmp_path, """
        from torch import manual_seed

        def setup(device):
            return {"lin": nn.Linear(8, 8).to(device), "saved": torch.get_rng_state()}

        def step(lin, saved):
            manual_seed(7)
            torch.set_rng_state(saved)
            with torch.random.fork_rng():
                y = torch.randn(4, 8, device="cuda")
            return lin(y)
        """)
    got = rules_at(findings, "CG405")
    assert [n for n, _ in got] == [line_of(path, "manual_seed(7)"), line_of(path, "torch.set_rng_state(saved)"),
                                    line_of(path, "fork_rng()")]
    assert {s for _, s in got} == {"error"}
    names = {op.name for op in trace.iterations[-1].ops if op.detail and "rng" in op.detail}
    assert names == {"torch.cuda.manual_seed_all", "torch.set_rng_state", "torch.random.fork_rng"}


def test_reseed_without_random_draws_is_a_warning(tmp_path):
    _, findings, path = run(tmp_path, """
        def setup(device):
            return {"lin": nn.Linear(8, 8).to(device)}

        def step(lin):
            torch.cuda.manual_seed_all(3)
            return lin(torch.ones(2, 8, device="cuda"))
        """)
    assert rules_at(findings, "CG405") == [(line_of(path, "manual_seed_all(3)"), "warning")]


def test_seeding_in_setup_and_torch_checkpoint_are_not_reported(tmp_path):
    """torch.utils.checkpoint saves and restores the RNG state itself (preserve_rng_state): torch's, not the user's."""
    trace, findings, _ = run(tmp_path, """
        from torch.utils.checkpoint import checkpoint

        def setup(device):
            torch.manual_seed(0)
            torch.cuda.manual_seed_all(0)
            return {"lin": nn.Linear(8, 8).to(device)}

        def inputs(i, device):
            return {"x": torch.ones(4, 8, device=device, requires_grad=True)}

        def block(lin, x):
            return F.dropout(lin(x), p=0.5, training=True)

        def step(lin, x):
            y = checkpoint(block, lin, x, use_reentrant=False, preserve_rng_state=True)
            y.sum().backward()
            return y.detach()
        """)
    assert rules_at(findings, "CG405") == []
    assert not any(op.detail and "rng" in op.detail for it in trace.iterations for op in it.ops)


def _reseed():
    torch.manual_seed(5)  # the step's line (the harness frame that opens an iteration is never the user's)


def test_the_tracer_restores_the_rng_functions():
    real = (torch.manual_seed, torch.cuda.manual_seed_all, torch.random.fork_rng, torch.set_rng_state)
    with Tracer() as tracer:
        assert torch.manual_seed is not real[0] and torch.random.manual_seed._cgtool_rng
        _reseed()  # outside an iteration: setup's seeding, not recorded
        with tracer.iteration(0):
            _reseed()
    assert (torch.manual_seed, torch.cuda.manual_seed_all, torch.random.fork_rng, torch.set_rng_state) == real
    assert [(op.name, tracer.trace.frames[op.frame].function) for op in tracer.trace.iterations[0].ops] == \
        [("torch.manual_seed", "_reseed")]
    assert STEP_WATCHERS == []


# ---- CG406: state tensors rebound instead of updated in place -------------------------------------------

REBIND = """
class RunningNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.register_buffer("avg", torch.zeros(8))
        self.count = 0

    def forward(self, x):
        y = self.proj(x)
        self.avg = 0.9 * self.avg + 0.1 * y.mean(0)
        self.count = self.count + 1
        return y - self.avg

class Ema:
    def __init__(self, device):
        self.value = torch.zeros((), device=device)

def setup(device):
    bufs = [torch.zeros(8, device=device)]
    return {"norm": RunningNorm().to(device), "stats": {"ema": torch.zeros((), device=device), "n": 0},
            "bufs": bufs, "tracker": Ema(device)}

def inputs(i, device):
    return {"x": torch.full((4, 8), float(i), device=device)}

@torch.no_grad()
def step(norm, stats, bufs, tracker, x):
    out = norm(x)
    stats["ema"] = stats["ema"] * 0.99 + out.mean() * 0.01
    stats["n"] += 1
    bufs[0] = torch.maximum(bufs[0], out.amax(0))
    tracker.value = tracker.value + out.sum()
    local = out * 2
    local = local + 1
    return local
"""


def test_rebound_state_is_found_at_the_line_that_made_the_new_tensor(tmp_path):
    trace, findings, path = run(tmp_path, REBIND)
    got = {(f.line, f.message.split("`")[1]) for f in findings if f.rule == "CG406"}
    assert got == {(line_of(path, "self.avg = 0.9"), "norm.avg"),
                   (line_of(path, 'stats["ema"] = '), "stats['ema']"),
                   (line_of(path, "bufs[0] = "), "bufs[0]"),
                   (line_of(path, "tracker.value = "), "tracker.value")}
    f = next(f for f in findings if f.rule == "CG406")
    assert f.category == "rebound-state" and f.severity == "error" and "update in place" in f.message
    # a Python number (count, stats['n']), the step's locals and its output are no tensor state
    paths = {r.path for it in trace.iterations for r in it.rebinds}
    assert paths == {"norm.avg", "stats['ema']", "bufs[0]", "tracker.value"}
    assert not trace.iterations[0].rebinds  # nothing to compare the first iteration with
    assert [r.read for r in trace.iterations[1].rebinds] == [None] * 4  # rebinding seen: watched from now on
    assert all(r.read for it in trace.iterations[2:] for r in it.rebinds)


def test_in_place_updates_and_values_recomputed_before_use_are_clean(tmp_path):
    """Updated in place: no rebinding. Recomputed before each use (weight norm's `weight`), or an output kept for
    the caller: rebound, but the step never reads the old tensor, so the graph reads what it wrote."""
    trace, findings, _ = run(tmp_path, """
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.g = nn.Parameter(torch.ones(8))
                self.register_buffer("avg", torch.zeros(8))

            def forward(self, x):
                self.weight = self.g * 2.0
                y = x * self.weight
                self.avg.mul_(0.9).add_(y.mean(0), alpha=0.1)
                return y

        def setup(device):
            model = Scaled().to(device)
            return {"model": model, "opt": torch.optim.SGD(model.parameters(), lr=0.1), "keep": {}}

        def inputs(i, device):
            return {"x": torch.randn(4, 8, device=device)}

        def step(model, opt, keep, x):
            opt.zero_grad(set_to_none=True)
            y = model(x)
            y.sum().backward()
            opt.step()
            keep["last"] = y.detach()
            return y.detach()
        """)
    assert [f for f in findings if f.rule == "CG406"] == []
    rebound = {(r.path, r.read) for it in trace.iterations[2:] for r in it.rebinds}
    assert rebound == {("model.weight", False), ("keep['last']", False)}


def test_rebinds_survive_json(tmp_path):
    trace, findings, _ = run(tmp_path, REBIND)
    again = Trace.from_json(json.loads(json.dumps(trace.to_json())))
    assert [it.rebinds for it in again.iterations] == [it.rebinds for it in trace.iterations]
    from cgtool.checks import run_checks

    assert run_checks(again) == findings


# ---- CG408: Python state the step changes every iteration --------------------------------------------------

BOOKKEEPING = """
class Trainer:
    def __init__(self, model):
        self.model, self.step_count, self.name = model, 0, "run"

class Counted(nn.Linear):
    def forward(self, x):
        self.calls = getattr(self, "calls", 0) + 1
        return super().forward(x)

def setup(device):
    return {"trainer": Trainer(Counted(8, 8).to(device)), "losses": [], "floats": [], "cfg": {"lr": 0.1}}

def inputs(i, device):
    return {"x": torch.randn(4, 8, device=device)}

def step(trainer, losses, floats, cfg, x):
    y = trainer.model(x).sum()
    trainer.step_count += 1
    losses.append(y.detach())
    floats.append(float(cfg["lr"]))
    return y.detach()
"""


def test_python_state_changed_every_iteration_is_a_warning_at_its_line(tmp_path):
    trace, findings, path = run(tmp_path, BOOKKEEPING)
    got = {(f.line, f.severity): f.message for f in findings if f.rule == "CG408"}
    def_line, append_line = line_of(path, "def step("), line_of(path, "losses.append")
    assert set(got) == {(def_line, "warning"), (append_line, "warning")}, got
    at_def = got[(def_line, "warning")]
    # the counter, the module's own counter and the list of floats, each with its values; the unchanged name and
    # config are not named
    assert "`trainer.step_count` (1 → 2 → 3 → 4)" in at_def and "`trainer.model.calls`" in at_def
    assert "`floats` (len 1 → len 2" in at_def and "cfg" not in at_def and "name" not in at_def
    assert "`losses` (len 1 → len 2 → len 3 → len 4)" in got[(append_line, "warning")]
    assert "the graph's own memory" in got[(append_line, "warning")] and "graph's own memory" not in at_def


def test_python_state_set_once_or_kept_is_not_reported(tmp_path):
    _, findings, _ = run(tmp_path, """
        def setup(device):
            return {"lin": nn.Linear(8, 8).to(device), "cache": {}, "window": [0.0] * 4, "box": {"k": 0},
                    "times": {}}

        def inputs(i, device):
            return {"x": torch.randn(4, 8, device=device)}

        def step(lin, cache, window, box, times, x):
            cache.setdefault("scale", 2.0)  # lazy initialization: the first iteration only
            box["k"] = 1  # set to the same value every iteration
            lin.train()  # a module's own flag
            start = torch.cuda.Event()  # torch's own objects (on the CPU run, cgtool's stand-ins for them)
            start.record()
            times["start"] = start
            return lin(x) * cache["scale"]
        """)
    assert [f for f in findings if f.rule == "CG408"] == []


def test_host_changes_survive_json(tmp_path):
    trace, findings, _ = run(tmp_path, BOOKKEEPING)
    again = Trace.from_json(json.loads(json.dumps(trace.to_json())))
    assert [it.host_changes for it in again.iterations] == [it.host_changes for it in trace.iterations]
    assert any(c.tensors for it in again.iterations for c in it.host_changes)
    from cgtool.checks import run_checks

    assert run_checks(again) == findings


def test_python_state_what_inputs_moves_a_subclassed_scheduler_and_torch_named_libraries(tmp_path):
    """What inputs() changes (a loader's cursor) moves between replays too: not the step's. A user's subclass of a
    torch scheduler is torch's object (its numbers are CG402's). A library whose package name merely starts with
    "torch" (torchmetrics, torch_ema) is not torch: its growing list is reported."""
    trace, findings, path = run(tmp_path, """
        import weakref

        class Loader:
            def __init__(self):
                self.cursor = 0

        class WarmupLR(torch.optim.lr_scheduler.StepLR):
            pass

        class Metric:
            __module__ = "torchmetrics.classification"

            def __init__(self):
                self.preds = []

        class Unreadable(str):
            def __repr__(self):
                raise RuntimeError("no repr")

        class Holder:
            pass

        LOADER = Loader()

        def setup(device):
            lin = nn.Linear(8, 8).to(device)
            opt = torch.optim.AdamW(lin.parameters(), lr=torch.tensor(0.01), capturable=True)
            gone = Holder()
            return {"lin": lin, "opt": opt, "sched": WarmupLR(opt, 1), "loader": LOADER, "metric": Metric(),
                    "odd": {"name": Unreadable("x"), "proxy": weakref.proxy(gone)}}

        def inputs(i, device):
            LOADER.cursor += 1
            return {"x": torch.randn(4, 8, device=device)}

        def step(lin, opt, sched, loader, metric, odd, x):
            y = lin(x).sum()
            y.backward()
            opt.step()
            sched.step()
            metric.preds.append(y.detach())
            return y.detach()
        """)
    got = [(f.line, f.message) for f in findings if f.rule == "CG408"]
    assert [line for line, _ in got] == [line_of(path, "metric.preds.append")], got
    assert "`metric.preds` (len 1 → len 2" in got[0][1] and "`loader" not in got[0][1] and "`sched" not in got[0][1]
    assert trace.tracer_error is None


def test_python_state_in_dicts_deques_and_numpy_numbers(tmp_path):
    np = pytest.importorskip("numpy")
    assert np is not None
    _, findings, path = run(tmp_path, """
        import collections
        import numpy as np

        def setup(device):
            return {"lin": nn.Linear(8, 8).to(device), "history": {}, "window": collections.deque(maxlen=100),
                    "counts": {"n": np.int64(0)}}

        def inputs(i, device):
            return {"x": torch.randn(4, 8, device=device)}

        def step(lin, history, window, counts, x):
            y = lin(x).sum()
            counts["n"] += 1
            history[int(counts["n"])] = {"loss": y.detach()}
            window.append(float(counts["n"]))
            return y.detach()
        """)
    got = {f.line: f.message for f in findings if f.rule == "CG408"}
    at_def, at_history = got[line_of(path, "def step(")], got[line_of(path, "history[int(")]
    assert "`counts['n']` (1 → 2 → 3 → 4)" in at_def and "`window` (len 1 → len 2" in at_def
    assert "`history` (len 1 → len 2" in at_history and "the graph's own memory" in at_history
