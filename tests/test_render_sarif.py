import json
import re
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")  # not on every machine the GPU tests run on

from lint_samples import BROKEN, GPU_ONLY, ITEM_SYNC, MASK_INDEX, SIDE_STREAM, cpu_result, cuda_result

from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import RULES, finding
from cgtool.render.sarif import RULES_DOC_URL, SRCROOT, render_sarif, rule_help_uri, sarif_log

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def validate(log):
    errors = sorted(VALIDATOR.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_the_schema_is_the_sarif_2_1_0_schema():
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert SCHEMA["properties"]["version"]["enum"] == ["2.1.0"]
    jsonschema.Draft7Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("make", [cpu_result, cuda_result, LintResult])
@pytest.mark.parametrize("base_dir", [None, "."])
def test_output_validates_against_the_sarif_schema(make, base_dir):
    text = render_sarif(make(), base_dir=base_dir, command_line=["cgtool", "lint", "--format", "sarif", "samples/"])
    validate(json.loads(text))


def test_the_validator_rejects_a_broken_log():
    log = sarif_log(cpu_result())
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, SCHEMA)


def test_driver_lists_every_rule_with_help_and_level():
    driver = sarif_log(cpu_result())["runs"][0]["tool"]["driver"]
    assert driver["name"] == "cgtool" and driver["version"] == "0.1.0"
    assert [r["id"] for r in driver["rules"]] == [r.id for r in RULES]
    by_id = {r["id"]: r for r in driver["rules"]}
    assert by_id["CG101"]["shortDescription"]["text"] == next(r.title for r in RULES if r.id == "CG101")
    assert by_id["CG101"]["helpUri"] == f"{RULES_DOC_URL}#cg101"
    assert by_id["CG101"]["defaultConfiguration"]["level"] == "error"
    assert by_id["CG403"]["defaultConfiguration"]["level"] == "warning"
    assert by_id["CG503"]["properties"]["needsGpu"] is True
    assert by_id["CG201"]["properties"]["needsGpu"] is False


def test_results_locate_each_finding_relative_to_the_base_dir(tmp_path):
    result = cpu_result()
    run = sarif_log(result, base_dir=".")["runs"][0]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["CG101", "CG103", "CG102"]
    first = results[0]
    assert first["level"] == "error"
    assert first["message"]["text"].startswith("host reads a GPU value")
    assert "Fix: Keep the value on the GPU" in first["message"]["text"]
    physical = first["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": ITEM_SYNC, "uriBaseId": SRCROOT}
    assert physical["region"] == {"startLine": 14, "snippet": {"text": "    if loss.item() > 10.0:"}}
    assert first["locations"][0]["logicalLocations"] == [{"name": "step", "kind": "function"}]
    rules = run["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == MASK_INDEX
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == Path(".").resolve().as_uri() + "/"


def test_a_base_dir_below_the_cwd_shortens_the_uri():
    run = sarif_log(cpu_result(), base_dir="samples")["runs"][0]
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "hazards/item_sync.py"


def test_a_file_outside_the_base_dir_gets_an_absolute_uri(tmp_path):
    outside = tmp_path / "elsewhere" / "train.py"
    result = LintResult([ScriptResult(str(outside), findings=[finding("CG104", file=str(outside), line=3)])])
    run = sarif_log(result, base_dir=ROOT)["runs"][0]
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": outside.resolve().as_uri()}
    validate(sarif_log(result, base_dir=ROOT))


def test_a_finding_without_file_or_line_points_at_its_script():
    result = LintResult([ScriptResult(SIDE_STREAM, device="cuda", findings=[finding("CG502")])], device="cuda")
    log = sarif_log(result)
    physical = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert physical == {"artifactLocation": {"uri": SIDE_STREAM}}
    assert log["runs"][0]["results"][0]["level"] == "warning"
    validate(log)


def test_info_severity_is_a_note():
    result = LintResult([ScriptResult(ITEM_SYNC, findings=[finding("CG101", file=ITEM_SYNC, line=1, severity="info")])])
    assert sarif_log(result)["runs"][0]["results"][0]["level"] == "note"


def test_invocation_reports_script_errors_skipped_rules_and_exit_code():
    invocation = sarif_log(cpu_result(), command_line=["cgtool", "lint", "samples/"])["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["exitCode"] == 1
    assert invocation["commandLine"] == "cgtool lint samples/"
    assert invocation["arguments"] == ["lint", "samples/"]
    [error] = invocation["toolExecutionNotifications"]
    assert error["level"] == "error" and BROKEN in error["message"]["text"] and "apex" in error["message"]["text"]
    skipped = invocation["toolConfigurationNotifications"]
    assert [n["associatedRule"]["id"] for n in skipped] == sorted(GPU_ONLY)
    rules = [r.id for r in RULES]
    assert all(rules[n["associatedRule"]["index"]] == n["associatedRule"]["id"] for n in skipped)
    assert all("no CUDA device" in n["message"]["text"] for n in skipped)
    assert invocation["properties"]["device"] == "cpu"


def test_a_clean_gpu_run_is_successful():
    clean = LintResult([ScriptResult("samples/train_step.py", device="cuda")], version="0.1.0", device="cuda")
    invocation = sarif_log(clean)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is True and invocation["exitCode"] == 0
    assert invocation["toolConfigurationNotifications"] == []
    assert sarif_log(clean)["runs"][0]["results"] == []


def test_help_uris_match_the_anchors_in_docs_rules_md():
    """Each rule's helpUri anchor is the GitHub anchor of its `## CGxxx` heading in docs/rules.md."""
    text = (ROOT / "docs" / "rules.md").read_text()
    headings = re.findall(r"^## (CG\d{3})\s*$", text, flags=re.MULTILINE)
    assert headings == [r.id for r in RULES]
    for rule in RULES:
        anchor = rule_help_uri(rule.id).split("#", 1)[1]
        assert anchor == rule.id.lower()
        section = text.split(f"## {rule.id}\n", 1)[1].split("\n## ", 1)[0]
        assert "Bad" in section and "Good" in section, rule.id
        assert rule.severity in section and rule.category in section, rule.id
