"""`cgtool lint --format gitlab`: GitLab Code Quality issues, checked against the fields GitLab documents
(tests/data/gitlab-code-quality.schema.json), with fingerprints that are unique and survive a moved line."""

from __future__ import annotations

import dataclasses
import json
import os

import jsonschema
from lint_samples import BROKEN, ITEM_SYNC, MASK_INDEX, cpu_result, cuda_result

from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import finding
from cgtool.render.gitlab import render_gitlab
from cgtool.render.lint_formats import render_lint

SCHEMA = os.path.join(os.path.dirname(__file__), "data", "gitlab-code-quality.schema.json")


def issues(result: LintResult, base_dir: str | None = None) -> list[dict]:
    out = render_gitlab(result, base_dir=base_dir)
    data = json.loads(out)
    with open(SCHEMA) as fh:
        jsonschema.validate(data, json.load(fh))
    assert out.endswith("\n")
    return data


def test_each_finding_and_script_error_is_an_issue_with_gitlabs_fields():
    got = issues(cpu_result())
    assert [(i["check_name"], i["severity"], i["location"]["path"], i["location"]["lines"]["begin"]) for i in got] == [
        ("CG101", "critical", ITEM_SYNC, 14), ("CG103", "critical", ITEM_SYNC, 17), ("CG102", "critical", MASK_INDEX, 9),
        ("cgtool/analysis-error", "blocker", BROKEN, 1)]
    first = got[0]["description"]
    assert first.startswith("CG101 [sync] host reads a GPU value") and "Fix: " in first
    assert "No module named 'apex'" in got[3]["description"]
    assert len({i["fingerprint"] for i in got}) == len(got)


def test_severity_follows_the_finding():
    got = issues(cuda_result())
    assert [(i["check_name"], i["severity"]) for i in got] == [("CG201", "critical"), ("CG403", "minor")]
    note = LintResult([ScriptResult(ITEM_SYNC, findings=[finding("CG502", file=ITEM_SYNC, severity="info")])])
    only = issues(note)[0]
    assert only["severity"] == "info" and only["location"]["lines"]["begin"] == 1  # no line: the file's first


def test_a_fingerprint_survives_a_moved_line_and_two_alike_stay_two():
    f = finding("CG101", file=ITEM_SYNC, line=14, source="    if loss.item() > 10.0:", function="step")
    before = issues(LintResult([ScriptResult(ITEM_SYNC, findings=[f])]))
    moved = issues(LintResult([ScriptResult(ITEM_SYNC, findings=[dataclasses.replace(f, line=20)])]))
    assert before[0]["fingerprint"] == moved[0]["fingerprint"]
    twice = issues(LintResult([ScriptResult(ITEM_SYNC, findings=[f, dataclasses.replace(f, line=30)])]))
    assert twice[0]["fingerprint"] == before[0]["fingerprint"] != twice[1]["fingerprint"]


def test_paths_are_relative_to_the_repository(tmp_path):
    script = tmp_path / "steps" / "train.py"
    f = finding("CG101", file=str(script), line=3)
    got = issues(LintResult([ScriptResult(str(script), findings=[f])]), base_dir=str(tmp_path))
    assert got[0]["location"]["path"] == "steps/train.py"


def test_a_clean_run_is_an_empty_array_and_the_format_is_registered():
    assert issues(LintResult([ScriptResult("samples/train_step.py")])) == []
    assert json.loads(render_lint(cpu_result(), "gitlab"))[0]["check_name"] == "CG101"
