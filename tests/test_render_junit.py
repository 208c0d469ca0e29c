import xml.etree.ElementTree as ET

from lint_samples import BROKEN, CLEAN, GPU_ONLY, ITEM_SYNC, MASK_INDEX, SIDE_STREAM, cpu_result, cuda_result

from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import RULE_BY_ID, finding
from cgtool.render.junit import render_junit


def parse(result: LintResult, **kwargs) -> ET.Element:
    text = render_junit(result, **kwargs)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    assert text.endswith("\n")
    return ET.fromstring(text.encode("utf-8"))


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name"): c for c in root.iter("testcase")}


def test_one_suite_with_a_case_per_script_and_per_skipped_rule():
    root = parse(cpu_result())
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "cgtool lint"
    scripts = [c.get("name") for c in suite.findall("testcase") if c.get("classname") == "cgtool.lint"]
    assert scripts == [ITEM_SYNC, MASK_INDEX, CLEAN, BROKEN]
    skipped = [c for c in suite.findall("testcase") if c.get("classname") == "cgtool.model.rules"]
    assert [c.get("name").split()[0] for c in skipped] == sorted(GPU_ONLY)
    expected = {"tests": str(4 + len(GPU_ONLY)), "failures": "2", "errors": "1", "skipped": str(len(GPU_ONLY))}
    for element in (root, suite):
        assert {k: element.get(k) for k in expected} == expected
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"cgtool.version": "0.1.0", "device": "cpu"}


def test_error_findings_are_one_failure_listing_them_all():
    case = cases(parse(cpu_result()))[ITEM_SYNC]
    [failure] = case.findall("failure")
    assert failure.get("type") == "CG101"
    assert failure.get("message").startswith("2 error findings: CG101 host reads a GPU value")
    lines = failure.text.splitlines()
    assert lines[0] == f"{ITEM_SYNC}:14: CG101 [sync] {RULE_BY_ID['CG101'].title}"
    assert lines[1] == "    if loss.item() > 10.0:"
    assert lines[2].startswith("    fix: Keep the value on the GPU")
    assert any(line.startswith(f"{ITEM_SYNC}:17: CG103 [sync]") for line in lines)
    assert case.find("error") is None and case.find("skipped") is None


def test_a_clean_script_passes_and_a_broken_one_is_an_error():
    by_name = cases(parse(cpu_result()))
    clean = by_name[CLEAN]
    assert list(clean) == []
    broken = by_name[BROKEN]
    [error] = broken.findall("error")
    assert "No module named 'apex'" in error.get("message")
    assert broken.find("failure") is None


def test_skipped_rules_carry_the_reason():
    by_name = cases(parse(cpu_result()))
    case = by_name[f"CG503 {RULE_BY_ID['CG503'].title}"]
    [skipped] = case.findall("skipped")
    assert "no CUDA device" in skipped.get("message")


def test_warnings_are_output_not_failures():
    root = parse(cuda_result())
    assert root.get("failures") == "1" and root.get("skipped") == "0" and root.get("tests") == "2"
    case = cases(root)[SIDE_STREAM]
    assert case.find("failure").get("type") == "CG201"
    out = case.find("system-out").text
    assert out.startswith(f"warning: {SIDE_STREAM}:8: CG403 [warmup]")
    assert "CG201" not in out


def test_special_characters_survive_and_control_characters_are_replaced():
    message = 'x < y & "quoted"\nsecond line \x1b[31mred\x1b[0m'
    f = finding("CG101", message, file=ITEM_SYNC, line=5, source="if a < b and c > 0:")
    root = parse(LintResult([ScriptResult(ITEM_SYNC, findings=[f], errors=["exit \x07 code"])]))
    case = cases(root)[ITEM_SYNC]
    failure = case.find("failure")
    assert 'x < y & "quoted"\nsecond line' in failure.text
    assert "\x1b" not in failure.text and "\ufffd[31mred" in failure.text
    assert "x < y & \"quoted\"" in failure.get("message")
    assert "if a < b and c > 0:" in failure.text
    assert case.find("error").text == "exit \ufffd code"


def test_an_empty_run_is_an_empty_suite():
    root = parse(LintResult(version="0.1.0"))
    assert root.get("tests") == "0" and root.find("testsuite").findall("testcase") == []


def test_base_dir_makes_names_relative(tmp_path):
    script = tmp_path / "samples" / "train.py"
    root = parse(LintResult([ScriptResult(str(script))]), base_dir=tmp_path)
    assert list(cases(root)) == ["samples/train.py"]
