"""cgtool's assertion in a user's own test file (tests/data/user_tests/test_user_step.py), run by pytest in a
subprocess as the user's CI would: the hazards fail with their findings (file:line, rule, message, fix) as the
message, the clean steps pass; on this CPU machine through the CPU analysis."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_TESTS = os.path.join(ROOT, "tests", "data", "user_tests")


def _plugin_args() -> list[str]:
    """-p for cgtool's plugin unless its pytest11 entry point (an installed cgtool) already loads it."""
    installed = any(ep.name == "cgtool" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", "cgtool.testing.plugin"]


def test_a_user_test_file_fails_on_hazards_with_the_findings_and_passes_clean_steps(tmp_path):
    junit = tmp_path / "junit.xml"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-m", "pytest", *_plugin_args(), "--rootdir", USER_TESTS, "--confcutdir",
                        USER_TESTS, "-p", "no:cacheprovider", f"--junit-xml={junit}",
                        os.path.join(USER_TESTS, "test_user_step.py")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr  # pytest: some tests failed
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_item_sync_sample", "test_mlp_inference_sample", "test_logging_step", "test_clean_step"}
    for passing in ("test_mlp_inference_sample", "test_clean_step"):
        assert not list(cases[passing]), (passing, r.stdout)
    sample = cases["test_item_sync_sample"].find("failure")
    assert sample is not None, r.stdout
    text = sample.get("message", "") + (sample.text or "")
    assert "samples/hazards/item_sync.py:step is not capturable as a CUDA graph (" in text
    assert "item_sync.py:30: error: CG101 [sync] `.item()` reads a GPU value on the host" in text
    assert "history.append(loss.item())" in text and "fix: Keep the value on the GPU" in text
    own = cases["test_logging_step"].find("failure")
    assert own is not None, r.stdout
    text = own.get("message", "") + (own.text or "")
    assert "test_user_step.py:39: error: CG101 [sync] `bool(tensor)`" in text
    assert "if y.abs().max() > 100:" in text
    if "checked on cpu" in text:  # no GPU here: the rules that need one are named
        assert "Not checked on this machine (no CUDA device" in text
    assert "cgtool/testing/__init__.py" not in text  # the traceback stops at the user's test (__tracebackhide__)


def test_the_plugin_is_registered_for_pytest():
    tomllib = pytest.importorskip("tomllib")

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        project = tomllib.load(fh)["project"]
    target = project["entry-points"]["pytest11"]["cgtool"]
    module = importlib.import_module(target)
    assert callable(module.cgtool_check)
