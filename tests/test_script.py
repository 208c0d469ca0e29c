import os

import pytest
import torch
from conftest import DATA, ROOT

from cgtool.errors import CgtoolError
from cgtool.script.contract import Args, ScriptRaised, load_script, parse_target

SCRIPTS = os.path.join(DATA, "scripts")


def test_parse_target():
    assert parse_target("a.py") == ("a.py", "step")
    assert parse_target("a.py:train") == ("a.py", "train")
    assert parse_target("a.py:train", entry="other") == ("a.py", "other")


def test_load_and_call_tuple_contract():
    s = load_script(os.path.join(SCRIPTS, "good_tuple.py"))
    dev = torch.device("cpu")
    state = s.call_setup(dev)
    inp = s.call_inputs(2, dev)
    out = s.call_step(state, inp)
    assert torch.equal(out, torch.full((4, 4), 8.0))


def test_dict_contract_and_samples_load():
    s = load_script(os.path.join(ROOT, "samples", "mlp_inference.py"))
    dev = torch.device("cpu")
    out = s.call_step(s.call_setup(dev), s.call_inputs(0, dev))
    assert out.shape == (32, 512)


def test_size_keyword_passed_only_when_accepted():
    s = load_script(os.path.join(SCRIPTS, "size_aware.py"))
    assert s.accepts_size()
    dev = torch.device("cpu")
    out = s.call_step(s.call_setup(dev, size=3), s.call_inputs(1, dev, size=3))
    assert out.shape == (3, 3)
    assert not load_script(os.path.join(SCRIPTS, "good_tuple.py")).accepts_size()


def test_args_mixing_and_clash():
    a = Args.of({"x": 1}, "setup") + Args.of((2,), "inputs")
    assert a.args == (2,) and a.kwargs == {"x": 1}
    assert Args.of(None, "setup") == Args()
    assert Args.of(5, "inputs").args == (5,)
    with pytest.raises(CgtoolError, match="both return"):
        Args.of({"x": 1}, "setup") + Args.of({"x": 2}, "inputs")


def test_missing_file():
    with pytest.raises(CgtoolError, match="No such file"):
        load_script("/nonexistent/x.py")


def test_syntax_error_names_line():
    with pytest.raises(CgtoolError, match=r"syntax_error.py:3"):
        load_script(os.path.join(SCRIPTS, "syntax_error.py"))


def test_no_entry_shows_contract():
    with pytest.raises(CgtoolError) as info:
        load_script(os.path.join(SCRIPTS, "no_entry.py"))
    assert "has no function `step()`" in info.value.message
    assert "def inputs(i, device)" in info.value.message
    assert "It defines setup" in info.value.message


def test_other_entry():
    s = load_script(os.path.join(SCRIPTS, "no_entry.py"), "forward")
    assert s.step(3) == 3


def test_user_traceback_cut_to_user_frames():
    s = load_script(os.path.join(SCRIPTS, "setup_raises.py"))
    try:
        s.call_setup(torch.device("cpu"))
    except AttributeError as exc:
        raised = ScriptRaised("setup", exc)
    tb = raised.user_traceback()
    assert "setup_raises.py\", line 5, in make_model" in tb
    assert "setup_raises.py\", line 9, in setup" in tb
    assert "site-packages" not in tb and "cgtool/script.py" not in tb


def test_a_list_is_one_argument_only_tuples_spread():
    xs = [1, 2]
    assert Args.of(xs, "inputs").args == (xs,)
    assert Args.of((1, 2), "inputs").args == (1, 2)


def test_setup_and_inputs_load_by_the_names_a_job_asks_for(tmp_path):
    """cgtool.check(step, setup=make) sends Job.settings setup_fn="make" (None: no setup at all)."""
    from cgtool.errors import CgtoolError
    from cgtool.model.job import CaptureSettings
    from cgtool.script.contract import contract_names, load_script

    path = tmp_path / "s.py"
    path.write_text("def make(device):\n    return {'a': 1}\n\ndef setup(device):\n    return {'b': 2}\n\n"
                    "def inputs(i, device):\n    return {'c': i}\n\ndef step(a):\n    return a\n")
    script = load_script(str(path), "step", *contract_names(CaptureSettings(setup_fn="make", inputs_fn=None)))
    assert script.setup.__name__ == "make" and script.inputs is None and script.names == ("make", None)
    assert script.call_step(script.call_setup("cpu"), script.call_inputs(0, "cpu")) == 1
    assert load_script(str(path), "step", *contract_names(CaptureSettings())).setup.__name__ == "setup"  # the contract's defaults
    with pytest.raises(CgtoolError, match=r"has no function `nope\(\)` \(asked for as setup\)"):
        load_script(str(path), "step", "nope", None)
