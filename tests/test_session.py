"""The script session (cgtool/script/session.py), the one error ladder of a job (script/errors.py: job_error), the
one save/restore of setup's state (capture/host_state.py: SavedState) and setup/inputs names checked as the entry is
(script/contract.py): on the CPU, with real scripts."""

from __future__ import annotations

import contextlib

import pytest
import torch

from cgtool.capture.host_state import SavedState
from cgtool.errors import CgtoolError, ExitCode
from cgtool.script.contract import Args, ScriptExit, ScriptRaised, load_script
from cgtool.script.errors import job_error
from cgtool.script.session import ScriptSession

SCRIPT = """
import torch
SETUPS = []

def setup(device, size=None):
    SETUPS.append(size)
    return {"w": torch.ones(3, device=device), "log": []}

def inputs(i, device):
    if i == 7:
        raise ValueError("no inputs for 7")
    return {"x": torch.full((3,), float(i), device=device)}

def step(w, log, x):
    log.append(float(x[0]))
    if float(x[0]) == 5:
        raise RuntimeError("step fails at 5")
    w.mul_(2)
    return w + x
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "s.py"
    path.write_text(SCRIPT)
    return load_script(str(path))


def test_setup_runs_once_and_every_call_shares_its_state(script):
    session = ScriptSession(script, torch.device("cpu"), size=4)
    state = session.setup()
    assert session.setup() is state and script.module.SETUPS == [4]
    out = session.call(session.inputs(2))
    assert torch.equal(out, torch.full((3,), 4.0)) and state.kwargs["log"] == [2.0]
    other = session.with_script(script)  # another way of running the step on the same state
    assert other.state is state
    other.call(session.inputs(3))
    assert torch.equal(state.kwargs["w"], torch.full((3,), 4.0)) and script.module.SETUPS == [4]


def test_a_session_given_a_state_never_runs_setup(script):
    state = Args((), {"w": torch.zeros(3), "log": []})
    session = ScriptSession(script, torch.device("cpu"), state=state)
    assert session.setup() is state and script.module.SETUPS == []


def test_what_the_script_raises_leaves_with_its_phase(script):
    session = ScriptSession(script, torch.device("cpu"))
    with pytest.raises(ScriptRaised) as raised:
        session.inputs(7)
    assert raised.value.phase == "inputs" and isinstance(raised.value.exc, ValueError)
    with pytest.raises(ScriptRaised) as raised:
        session.step(session.inputs(5), "timing")
    assert raised.value.phase == "timing" and str(raised.value.exc) == "step fails at 5"
    with pytest.raises(RuntimeError, match="step fails at 5"):  # call: unchanged, for a capture to read its chain
        session.call(session.inputs(5))
    with pytest.raises(ScriptRaised) as raised:
        session.inputs_from(5, 3)  # inputs(5), inputs(6), inputs(7): made before any step, the third raises
    assert raised.value.phase == "inputs"


def test_a_setup_that_raises_is_phase_setup_and_leaves_no_state(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("def setup(device):\n    raise KeyError('weights')\n\ndef step():\n    return 1\n")
    session = ScriptSession(load_script(str(path)), torch.device("cpu"))
    with pytest.raises(ScriptRaised) as raised:
        session.setup()
    assert raised.value.phase == "setup" and session.state is None


def test_hooks_hear_setup_and_every_step(script):
    heard: list[object] = []
    session = ScriptSession(script, torch.device("cpu"), on_setup=lambda s: heard.append(("setup", sorted(s.kwargs))),
                            before_step=lambda: heard.append("step"))
    session.setup()
    session.call(session.inputs(0))
    session.step(session.inputs(1))
    assert heard == [("setup", ["log", "w"]), "step", "step"]


def test_warmup_runs_n_iterations_on_the_stream_and_names_a_failing_one(script, monkeypatch):
    streams: list[object] = []

    class Stream:
        def wait_stream(self, other: object) -> None:
            streams.append("wait")

    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: Stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext(streams.append(s)))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    session = ScriptSession(script, torch.device("cpu"))
    session.setup()
    stream = Stream()
    session.warmup(3, stream)
    assert session.state is not None and session.state.kwargs["log"] == [0.0, 1.0, 2.0] and stream in streams
    with pytest.raises(ScriptRaised) as raised:
        session.warmup(6, stream)  # inputs(5): the step raises in warmup
    assert raised.value.phase == "warmup" and "step fails at 5" in str(raised.value.exc)


@pytest.mark.parametrize("exc, phase, kind", [
    (CgtoolError("setup and inputs both return `x`"), "load", "usage"),
    (CgtoolError("no CUDA device", ExitCode.ENVIRONMENT), "load", "environment"),
    (ScriptRaised("inputs", ValueError("bad i")), "inputs", "ValueError"),
    (ScriptExit(SystemExit(3)), "warmup", "SystemExit"),
    (KeyboardInterrupt("stop"), "warmup", "KeyboardInterrupt"),
])
def test_job_error_is_the_one_ladder_from_an_exception_to_its_record(exc, phase, kind):
    record = job_error(exc, "warmup")
    assert record is not None and (record.phase, record.type) == (phase, kind)


def test_job_error_leaves_cgtools_own_failure_to_the_job():
    assert job_error(RuntimeError("a cgtool bug"), "capture") is None
    assert job_error(ScriptExit(SystemExit(0)), None).phase == "load"  # no phase yet: loading


def test_saved_state_puts_back_tensors_attributes_and_the_rng(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_rng_state", torch.get_rng_state)
    monkeypatch.setattr(torch.cuda, "set_rng_state", torch.set_rng_state)

    class Cache:
        def __init__(self) -> None:
            self.calls, self.seen = 0, [1]

    model, cache = torch.nn.Linear(2, 2), Cache()
    state = Args((), {"model": model, "cache": cache})
    weight, draw = model.weight.detach().clone(), None
    saved = SavedState.of(state)
    draw = torch.rand(2)
    with torch.no_grad():
        model.weight.add_(1)
    cache.calls, cache.seen = 5, []
    saved.restore()
    assert torch.equal(model.weight, weight) and (cache.calls, cache.seen) == (0, [1])
    assert torch.equal(torch.rand(2), draw)  # the RNG is where it was
    untouched = SavedState.of(state, pairs=[])  # the Python side and the RNG only
    with torch.no_grad():
        model.weight.add_(1)
    untouched.restore()
    assert torch.equal(model.weight, weight + 1)


def test_saved_state_puts_back_a_tensor_learning_rate_the_scheduler_wrote(monkeypatch):
    """A capturable optimizer's lr is a tensor in param_groups that a scheduler writes in place (fill_): it is state,
    put back like the parameters. Found on an H200: StepLR(step_size=1) on a tensor lr replays exactly as eager in
    plain PyTorch, but cgtool's second eager run started from the first run's decayed lr, so the check said the
    replay differed (tests/gpu/test_scheduler_gpu.py)."""
    monkeypatch.setattr(torch.cuda, "get_rng_state", torch.get_rng_state)
    monkeypatch.setattr(torch.cuda, "set_rng_state", torch.set_rng_state)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(0.05), betas=(torch.tensor(0.9), torch.tensor(0.99)))
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    saved = SavedState.of(Args((), {"model": model, "opt": opt, "sched": sched}))
    names = [n for n, _ in saved.pairs]
    assert {"state[1]['opt'].param_groups[0].lr", "state[1]['opt'].param_groups[0].betas[0]"} <= set(names), names
    for _ in range(3):
        model(torch.ones(1, 2)).sum().backward()
        opt.step()
        sched.step()
    assert float(opt.param_groups[0]["lr"]) == pytest.approx(0.05 / 8)
    saved.restore()
    assert float(opt.param_groups[0]["lr"]) == pytest.approx(0.05) and sched.last_epoch == 0

@pytest.mark.parametrize("name", ["__class__", "__dict__", "not-a-name", "def", ""])
def test_setup_and_inputs_names_are_checked_as_the_entry_is(tmp_path, name):
    path = tmp_path / "s.py"
    path.write_text("def step():\n    return 1\n")
    for role, names in (("setup", (name, None)), ("inputs", (None, name))):
        with pytest.raises(CgtoolError) as err:
            load_script(str(path), "step", *names)
        assert err.value.exit_code == ExitCode.USAGE and (role in err.value.message or "Python's own" in err.value.message)


def test_setup_names_are_the_scripts_globals_not_module_attributes(tmp_path):
    """A module attribute that is no global of the script (PEP 562 `__getattr__`) is not a setup function."""
    path = tmp_path / "s.py"
    path.write_text("def __getattr__(name):\n    return lambda device: {'x': 1}\n\ndef step(x=0):\n    return x\n")
    with pytest.raises(CgtoolError, match=r"has no function `make\(\)` \(asked for as setup\)"):
        load_script(str(path), "step", "make", None)


def test_cgtool_check_refuses_a_bad_setup_name_before_a_worker_starts(tmp_path):
    from cgtool.api.target import resolve

    path = tmp_path / "s.py"
    path.write_text("def step():\n    return 1\n")
    with pytest.raises(CgtoolError, match="Python's own"):
        resolve(str(path), None, "__class__", None)
