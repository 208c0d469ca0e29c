"""Issue 34: what crosses the boundary between cgtool and the script. A BaseException the script raises (its own
`class Stop(BaseException)`, GeneratorExit, SystemExit, KeyboardInterrupt) at import, in setup, inputs or the step
is the script's error at its line, like any exception (script/contract.py: ScriptExit); entry names are checked
once (entry_name), and an entry that names a class, a module or a value says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.job import CaptureSettings, Job
from cgtool.model.phase_log import PhaseLog
from cgtool.pipeline.capture_job import capture_job
from cgtool.script.contract import ScriptExit, entry_name, load_script, parse_target
from cgtool.script.errors import error_record

RAISES = {
    "Stop": "class Stop(BaseException):\n    pass\n",
    "GeneratorExit": "",
    "SystemExit": "",
    "KeyboardInterrupt": "",
}
# phase -> (where the raise goes, the phase cgtool reports)
PHASES = {"import": "load", "setup": "setup", "inputs": "inputs", "step": "warmup"}


def script_raising(kind: str, where: str, message: str = "from the script") -> tuple[str, int]:
    """A script whose `where` raises `kind`; the line of the raise."""
    lines = ["import torch", *RAISES[kind].splitlines()]
    raise_line = f"raise {kind}({message!r})"

    def body(name: str, args: str, ret: str) -> None:
        lines.append(f"def {name}({args}):")
        if where == name:
            lines.append(f"    {raise_line}")
        lines.append(f"    return {ret}")

    body("setup", "device", '{"w": torch.ones(2, device=device)}')
    body("inputs", "i, device", '{"x": torch.ones(2, device=device) * i}')
    body("step", "w, x", "w * x")
    if where == "import":
        lines.append(raise_line)
    return "\n".join(lines) + "\n", next(i for i, ln in enumerate(lines, 1) if raise_line in ln)


@pytest.mark.parametrize("kind", list(RAISES))
@pytest.mark.parametrize("where", list(PHASES))
def test_a_base_exception_is_the_scripts_error_at_its_line(tmp_path, kind, where):
    source, line = script_raising(kind, where)
    path = tmp_path / "s.py"
    path.write_text(source)
    report = capture_job(Job("capture", str(path), "step", CaptureSettings(warmup=2), True), PhaseLog())
    assert report.status == "script-error", report.errors
    [error] = report.errors
    assert error.phase == PHASES[where] and error.type == kind
    assert error.user_frame is not None and (error.user_frame.file, error.user_frame.line) == (str(path), line)
    assert "cgtool" not in error.user_frame.file.replace(str(tmp_path), "")


def test_script_exit_carries_the_scripts_exception_out_of_it():
    class Stop(BaseException):
        pass

    try:
        raise ScriptExit(Stop("x"))
    except Exception as exc:  # noqa: BLE001 - what every phase of cgtool catches
        record = error_record("step", exc)
    assert record.type == "Stop" and record.message == "x"
    assert error_record("load", ScriptExit(SystemExit(3))).message == "the script called sys.exit(3)"


def run_cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cgtool", *args], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, NO_COLOR="1", COLUMNS="200"), timeout=600)


def test_capture_and_lint_report_a_base_exception_never_a_dead_worker(tmp_path):
    source, line = script_raising("Stop", "step", "stopped by the script")
    (tmp_path / "stop.py").write_text(source)
    r = run_cli(tmp_path, "capture", "stop.py", "--out", "o")
    assert r.returncode == 1, r.stdout + r.stderr  # the script raised (README), not 4: the worker did not die
    assert f"warmup failed at {tmp_path / 'stop.py'}:{line} in step(): Stop: stopped by the script" in r.stdout
    assert "worker failed" not in r.stdout and "cgtool/" not in r.stdout
    for kind in RAISES:  # every kind at import and in the step, in one lint run
        for where in ("import", "step"):
            (tmp_path / "scripts").mkdir(exist_ok=True)
            (tmp_path / "scripts" / f"{kind}_{where}.py").write_text(script_raising(kind, where)[0])
    r = run_cli(tmp_path, "lint", "scripts", "--format", "json", "-j", "2")
    assert r.returncode == 1, r.stderr  # never called clean
    result = json.loads(r.stdout)
    assert result["summary"]["failed_scripts"] == 8
    for script in result["scripts"]:
        kind, where = os.path.basename(script["path"])[:-3].split("_")
        _, at = script_raising(kind, where)
        [message] = script["errors"]
        assert message.startswith(f"{PHASES[where]} failed at {script['path']}:{at}: {kind}"), message
        assert "worker" not in message


@pytest.mark.parametrize("name", ["", "__init__", "__class__", "__name__", "__builtins__", "not-an-id", "def", "1x",
                                  "a b", "step()", "__x__"])
def test_names_no_script_function_can_have_are_usage_errors(name):
    with pytest.raises(CgtoolError) as caught:
        entry_name(name)
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.message.startswith(("no such function", "not a valid entry name"))
    with pytest.raises(CgtoolError):
        parse_target("s.py", name)


def test_parse_target_checks_every_entry():
    assert parse_target("s.py") == ("s.py", "step")
    assert parse_target("s.py:train") == ("s.py", "train")
    assert parse_target("s.py:train", "other") == ("s.py", "other")
    assert entry_name("ﬁx") == "fix"  # as Python reads identifiers (NFKC)
    assert entry_name("_private") == "_private" and entry_name("schritt_ä") == "schritt_ä"
    with pytest.raises(CgtoolError, match="no such function '__init__'"):
        parse_target("s.py:__init__")


ENTRIES = """import torch
from torch import nn
import os.path as osp
class Model(nn.Module):
    pass
VALUE = 3
step = None
compiled = torch.compile(lambda x: x + 1)
module = nn.Linear(2, 2)
def real():
    return torch.ones(2)
"""


@pytest.mark.parametrize("entry, what", [("Model", "a class"), ("nn", "a module"), ("osp", "a module"),
                                         ("VALUE", "a value of type int"), ("step", "a value of type NoneType")])
def test_an_entry_that_is_no_function_says_what_it_is(tmp_path, entry, what):
    (tmp_path / "s.py").write_text(ENTRIES)
    with pytest.raises(CgtoolError) as caught:
        load_script(str(tmp_path / "s.py"), entry)
    assert f"`{entry}` is {what}, not a function" in caught.value.message
    assert caught.value.exit_code == ExitCode.USAGE


def test_callables_the_script_defines_or_imports_are_entries(tmp_path):
    (tmp_path / "s.py").write_text(ENTRIES)
    for entry in ("real", "compiled", "module"):  # a function, a compiled function, a module instance
        assert callable(load_script(str(tmp_path / "s.py"), entry).step)
    with pytest.raises(CgtoolError, match="has no function `missing\\(\\)`"):
        load_script(str(tmp_path / "s.py"), "missing")


@pytest.mark.parametrize("command", [["capture"], ["lint"], ["bench"], ["capture", "--nproc-per-node", "2"],
                                     ["lint", "--nproc-per-node", "2"], ["bench", "--nproc-per-node", "2"]])
@pytest.mark.parametrize("entry", ["__init__", "__class__", ""])
def test_every_command_refuses_a_bad_entry_before_running_anything(tmp_path, command, entry):
    from cgtool.cli import main

    (tmp_path / "s.py").write_text("def step():\n    pass\n")
    with pytest.raises(SystemExit) as ended:
        main([command[0], str(tmp_path / "s.py"), *command[1:], "--entry", entry])
    assert ended.value.code == ExitCode.USAGE
    assert not (tmp_path / "cgtool-out").exists()
