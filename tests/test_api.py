"""cgtool.check and its report (cgtool/api/): what it accepts as a step and what it refuses, in words; that
`import cgtool` stays cheap; the report's text and notebook display."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest

import cgtool
from cgtool.api.report import CheckReport
from cgtool.api.target import resolve
from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.lint_result import ScriptResult
from cgtool.model.report import Report
from cgtool.model.rules import finding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "mlp_inference.py")


def top_level_step(x):
    return x * 2


def top_level_setup(device):
    return {}


alias_setup = top_level_setup


def test_import_cgtool_loads_neither_torch_nor_the_api():
    code = ("import sys, cgtool; print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('cgtool.')));"
            "cgtool.check; print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    first, second = r.stdout.splitlines()
    assert first == "[]", r.stdout + r.stderr
    assert second == "False", r.stdout + r.stderr  # the API itself needs no torch in the parent either


def test_the_package_names_its_api_lazily():
    assert cgtool.check is cgtool.api.check and cgtool.CheckReport is CheckReport
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        cgtool.nothing  # noqa: B018


def test_a_script_path_with_its_entry():
    t = resolve(f"{SAMPLE}:step", None, None, None)
    assert (t.path, t.entry, t.settings) == (SAMPLE, "step", {})
    t = resolve(SAMPLE, "other", "make", None)
    assert (t.entry, t.settings) == ("other", {"setup_fn": "make"})


def test_a_step_function_is_found_by_its_file_and_name():
    t = resolve(top_level_step, None, alias_setup, None)
    assert t.path == os.path.abspath(__file__)
    assert t.entry == "top_level_step"
    assert t.settings == {"setup_fn": "top_level_setup", "inputs_fn": None}  # its own name first, then an alias


@pytest.mark.parametrize("make, words", [
    (lambda: Holder().method, "is not a top-level name of its module"),
    (lambda: (lambda x: x), "is a nested function"),
    (lambda: _nested(), "is a nested function"),
    (lambda: functools.partial(top_level_step), "must be a function named at the top level"),
    (lambda: len, "has no .py file the worker could import"),
    (lambda: 42, "expected a script path or a step function, got int"),
])
def test_what_the_worker_cannot_reach_is_a_usage_error_that_says_what_is_supported(make, words):
    with pytest.raises(CgtoolError) as err:
        resolve(make(), None, None, None)
    assert words in err.value.message and err.value.exit_code == ExitCode.USAGE


def test_a_function_from_a_notebook_cell_is_refused_in_words():
    code = ("import cgtool\ndef step(x):\n    return x\ntry:\n    cgtool.check(step)\n"
            "except cgtool.errors.CgtoolError as e:\n    print(e.message)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "comes from module '__main__', which has no .py file the worker could import" in r.stdout, r.stdout + r.stderr


def test_setup_from_another_file_than_the_script_is_refused():
    with pytest.raises(CgtoolError, match="is defined in .*test_api.py, not in the script"):
        resolve(SAMPLE, None, top_level_setup, None)


def test_a_missing_script_is_a_usage_error_before_any_worker():
    with pytest.raises(CgtoolError, match="No such file"):
        cgtool.check("no/such/script.py")


def test_a_bad_option_is_a_usage_error():
    with pytest.raises(CgtoolError, match="warmup must be"):
        cgtool.check(SAMPLE, warmup=0)
    with pytest.raises(CgtoolError, match="select"):
        cgtool.check(SAMPLE, select="XX9")


class Holder:
    def method(self, x):
        return x


def _nested():
    def inner(x):
        return x

    return inner


def _report(findings) -> CheckReport:
    report = Report("s.py", "step", status="cpu-only", findings=list(findings))
    return CheckReport(report, ScriptResult("s.py", findings=list(findings)), "0")


def test_the_report_passes_without_error_findings_and_shows_as_text_and_html():
    sync = finding("CG101", "`.item()` reads <b>a GPU value</b>", file="s.py", line=3, source="x.item()")
    bad = _report([sync])
    assert not bad.passed and bad.problems() == [sync]
    assert "s.py:3: error: CG101 [sync]" in str(bad)
    page = bad._repr_html_()
    assert "<b>a GPU value</b>" not in page and "&lt;b&gt;a GPU value&lt;/b&gt;" in page  # escaped, whatever renders
    assert _report([]).passed
