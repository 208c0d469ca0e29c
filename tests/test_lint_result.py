import json

import pytest
from lint_samples import BROKEN, GPU_ONLY, ITEM_SYNC, NO_CUDA, cpu_result, cuda_result, warnings_only_result

from cgtool.errors import ExitCode
from cgtool.model.lint_result import ANALYSED, ERROR, LINT_SCHEMA_VERSION, LintResult, ScriptResult
from cgtool.model.rules import finding
from cgtool.render.json_out import render_json


def test_counts_and_exit_code_of_a_cpu_run():
    r = cpu_result()
    assert r.error_count == 3
    assert r.warning_count == 0
    assert [s.path for s in r.failed_scripts] == [BROKEN]
    assert r.exit_code == ExitCode.PROBLEMS


def test_findings_come_with_their_script():
    pairs = list(cpu_result().findings())
    assert [(s.path, f.rule) for s, f in pairs][:2] == [(ITEM_SYNC, "CG101"), (ITEM_SYNC, "CG103")]
    assert len(pairs) == 3


def test_warnings_alone_pass():
    r = warnings_only_result()
    assert r.warning_count == 1 and r.error_count == 0
    assert r.exit_code == ExitCode.OK


def test_empty_run_passes():
    assert LintResult().exit_code == ExitCode.OK


def test_a_script_that_could_not_be_analysed_fails_the_run():
    r = LintResult([ScriptResult("samples/a.py"), ScriptResult("samples/b.py", status=ERROR)])
    assert r.error_count == 0
    assert r.exit_code == ExitCode.PROBLEMS


def test_errors_listed_fail_even_when_status_says_analysed():
    s = ScriptResult("samples/a.py", status=ANALYSED, errors=["worker timed out after 60 s"])
    assert s.failed
    assert LintResult([s]).exit_code == ExitCode.PROBLEMS


def test_an_error_finding_with_severity_lowered_passes():
    s = ScriptResult(ITEM_SYNC, findings=[finding("CG101", file=ITEM_SYNC, line=14, severity="warning")])
    assert LintResult([s]).exit_code == ExitCode.OK


def test_skipped_rules_are_the_sorted_union_with_a_reason():
    r = LintResult([
        ScriptResult("a.py", skipped_rules=["CG503", "CG201"], skipped_reason=NO_CUDA),
        ScriptResult("b.py", skipped_rules=["CG403"]),
    ])
    assert r.skipped_rules == ["CG201", "CG403", "CG503"]
    assert r.skipped_reason == NO_CUDA
    assert cuda_result().skipped_rules == []
    assert cuda_result().skipped_reason == ""


@pytest.mark.parametrize("make", [cpu_result, cuda_result, warnings_only_result, LintResult])
def test_json_round_trip(make):
    r = make()
    data = json.loads(json.dumps(r.to_json()))
    assert LintResult.from_json(data) == r


def test_json_carries_schema_summary_and_scripts():
    d = cpu_result().to_json()
    assert d["schema"] == LINT_SCHEMA_VERSION
    assert d["cgtool_version"] == "0.1.0"
    assert d["summary"] == {"scripts": 4, "failed_scripts": 1, "errors": 3, "warnings": 0, "infos": 0,
                            "skipped_rules": sorted(GPU_ONLY), "exit_code": 1,
                            "interrupted": False, "interrupted_by": None}
    item = d["scripts"][0]
    assert item["path"] == ITEM_SYNC
    assert item["findings"][0]["rule"] == "CG101"
    assert item["findings"][0]["line"] == 14
    assert d["scripts"][3]["status"] == "error"
    assert d["scripts"][3]["errors"] == ["ModuleNotFoundError: No module named 'apex' (line 3)"]


def test_from_json_rejects_another_schema_version():
    d = cpu_result().to_json()
    d["schema"] = 99
    with pytest.raises(ValueError, match="schema"):
        LintResult.from_json(d)


def test_render_json_is_the_result_json():
    r = cpu_result()
    out = render_json(r)
    assert out.endswith("\n")
    assert json.loads(out) == r.to_json()
    assert LintResult.from_json(json.loads(out)) == r
