"""`cgtool lint --format junit`: JUnit XML for test dashboards.

One <testsuite> for the run; one <testcase> per script, with a <failure> listing its error findings or an
<error> when it could not be analysed (warnings and notes go to <system-out>); one skipped <testcase>
per rule that could not run on this machine.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from cgtool.errors import interrupted
from cgtool.model.finding import Finding
from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import RULE_BY_ID
from cgtool.render.paths import display_path

# Characters XML 1.0 cannot carry (control characters such as ESC from coloured script output).
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(s: str) -> str:
    return _NOT_XML.sub("\ufffd", s)


def _describe(f: Finding, path: str) -> str:
    lines = [f"{path}:{f.line}: {f.rule} [{f.category}] {f.text}{f.status}" if f.line else
             f"{path}: {f.rule} [{f.category}] {f.text}{f.status}"]
    if f.source:
        lines.append(f"    {f.source.strip()}")
    if f.hint:
        lines.append(f"    fix: {f.hint}")
    return "\n".join(lines)


def _testcase(suite: ET.Element, script: ScriptResult, base_dir: str | Path | None) -> ET.Element:
    path = display_path(script.path, base_dir)
    case = ET.SubElement(suite, "testcase", {"classname": "cgtool.lint", "name": path, "file": path})
    errors = [f for f in script.findings if f.severity == "error"]
    others = [f for f in script.findings if f.severity != "error"]
    if script.failed:
        messages = script.errors or ["could not be analysed"]
        error = ET.SubElement(case, "error", {"type": "ScriptError", "message": _clean(messages[0])})
        error.text = _clean("\n".join(messages))
    if errors:
        first = errors[0]
        summary = f"{len(errors)} error finding{'s' if len(errors) != 1 else ''}: {first.rule} {first.text}"
        failure = ET.SubElement(case, "failure", {"type": first.rule, "message": _clean(summary)})
        failure.text = _clean("\n".join(_describe(f, display_path(f.file or script.path, base_dir)) for f in errors))
    if others:
        out = ET.SubElement(case, "system-out")
        out.text = _clean("\n".join(f"{f.severity}: " + _describe(f, display_path(f.file or script.path, base_dir))
                                    for f in others))
    return case


def _skipped_case(suite: ET.Element, rule_id: str, reason: str) -> ET.Element:
    rule = RULE_BY_ID.get(rule_id)
    name = f"{rule_id} {rule.title}" if rule else rule_id
    case = ET.SubElement(suite, "testcase", {"classname": "cgtool.model.rules", "name": _clean(name)})
    ET.SubElement(case, "skipped", {"message": _clean(reason)})
    return case


def render_junit(result: LintResult, *, base_dir: str | Path | None = None, suite_name: str = "cgtool lint") -> str:
    """The lint result as a JUnit XML document (UTF-8, with declaration), ending in a newline."""
    failures = sum(1 for s in result.scripts if s.count("error"))
    errors = len(result.failed_scripts)
    skipped = result.skipped_rules
    totals = {
        "tests": str(len(result.scripts) + len(skipped) + len(result.unchecked)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(len(skipped) + len(result.unchecked)),
    }
    root = ET.Element("testsuites", {"name": suite_name, **totals})
    suite = ET.SubElement(root, "testsuite", {"name": suite_name, **totals})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "cgtool.version", "value": result.version or "unknown"})
    ET.SubElement(props, "property", {"name": "device", "value": result.device})
    for script in result.scripts:
        _testcase(suite, script, base_dir)
    reason = result.skipped_reason or f"needs a CUDA device; this run was on {result.device}"
    for rule_id in skipped:
        _skipped_case(suite, rule_id, reason)
    for path in result.unchecked:  # an interrupted run: scripts it never reached
        shown = display_path(path, base_dir)
        case = ET.SubElement(suite, "testcase", {"classname": "cgtool.lint", "name": shown, "file": shown})
        ET.SubElement(case, "skipped", {"message": f"not checked: the run was {interrupted(result.stop)}"})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=False).join(
        ['<?xml version="1.0" encoding="UTF-8"?>\n', "\n"])
