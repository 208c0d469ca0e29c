"""`cgtool lint --format sarif`: a SARIF 2.1.0 log for code scanning (GitHub upload-sarif and others).

One run: tool.driver lists every rule of cgtool/rules.py (helpUri points at its docs/rules.md anchor);
each finding is a result located at its file (relative to `base_dir` under %SRCROOT%) and line.
Script errors and rules that could not run are invocation notifications.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cgtool.errors import interrupted
from cgtool.model.finding import Finding
from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import RULES, Rule
from cgtool.render.paths import relative_path

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
# Where docs/rules.md is published; each rule has the anchor #cg101 etc. (its heading is "## CG101").
TOOL_URL = "https://github.com/cgtool/cgtool"
RULES_DOC_URL = f"{TOOL_URL}/blob/main/docs/rules.md"
SRCROOT = "%SRCROOT%"

LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def rule_help_uri(rule_id: str, docs_url: str = RULES_DOC_URL) -> str:
    return f"{docs_url}#{rule_id.lower()}"


def _descriptor(rule: Rule, docs_url: str) -> dict[str, Any]:
    return {
        "id": rule.id,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.title + (" (detected only on a GPU)" if rule.needs_gpu else "")},
        "help": {"text": rule.hint,
                 "markdown": f"{rule.hint}\n\nSee [{rule.id} in docs/rules.md]({rule_help_uri(rule.id, docs_url)})."},
        "helpUri": rule_help_uri(rule.id, docs_url),
        "defaultConfiguration": {"level": LEVELS.get(rule.severity, "warning")},
        "properties": {"category": rule.category, "needsGpu": rule.needs_gpu, "tags": ["cuda-graphs", rule.category]},
    }


def _artifact(path: str, base_dir: str | Path | None) -> dict[str, Any]:
    if base_dir is None:
        return {"uri": Path(path).as_posix()}
    rel = relative_path(path, base_dir)
    if rel is None:  # outside the base dir: an absolute file URI
        return {"uri": Path(path).resolve().as_uri()}
    return {"uri": rel, "uriBaseId": SRCROOT}


def _location(f: Finding, script: ScriptResult, base_dir: str | Path | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(f.file or script.path, base_dir)}
    if f.line is not None and f.line >= 1:
        region: dict[str, Any] = {"startLine": f.line}
        if f.source:
            region["snippet"] = {"text": f.source}
        physical["region"] = region
    location: dict[str, Any] = {"physicalLocation": physical}
    if f.function:
        location["logicalLocations"] = [{"name": f.function, "kind": "function"}]
    return location


def _result(f: Finding, script: ScriptResult, base_dir: str | Path | None, index: dict[str, int]) -> dict[str, Any]:
    text = f"{f.text}{f.status}" if not f.hint else f"{f.text}{f.status}\nFix: {f.hint}"
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": text},
        "locations": [_location(f, script, base_dir)],
        "properties": {"category": f.category, "script": script.path, "device": script.device,
                       **({"evidence": f.evidence} if f.evidence else {})},
    }
    if f.rule in index:
        result["ruleIndex"] = index[f.rule]
    return result


def _notifications(result: LintResult, base_dir: str | Path | None,
                   index: dict[str, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tool execution notifications for script errors, configuration notifications for skipped rules)."""
    execution = []
    for script in result.failed_scripts:
        where = [{"physicalLocation": {"artifactLocation": _artifact(script.path, base_dir)}}]
        for message in script.errors or ["could not be analysed"]:
            execution.append({"level": "error", "message": {"text": f"{script.path}: {message}"}, "locations": where})
    if result.interrupted:
        execution.append({"level": "warning", "message": {"text": (
            f"{interrupted(result.stop)}: {len(result.unchecked)} script(s) not checked: {', '.join(result.unchecked)}")}})
    configuration = []
    for rule_id in result.skipped_rules:
        reason = result.skipped_reason or f"needs a CUDA device; this run was on {result.device}"
        rule_ref: dict[str, Any] = {"id": rule_id}
        if rule_id in index:
            rule_ref["index"] = index[rule_id]
        configuration.append({
            "level": "note",
            "message": {"text": f"{rule_id} was not checked: {reason}"},
            "associatedRule": rule_ref,
        })
    return execution, configuration


def sarif_log(result: LintResult, *, base_dir: str | Path | None = None,
              command_line: Sequence[str] | None = None, docs_url: str = RULES_DOC_URL) -> dict[str, Any]:
    """The SARIF log as a dict. `base_dir` makes artifact URIs relative (uriBaseId %SRCROOT%)."""
    index = {r.id: i for i, r in enumerate(RULES)}
    execution, configuration = _notifications(result, base_dir, index)
    invocation: dict[str, Any] = {
        "executionSuccessful": not result.failed_scripts and not result.interrupted,
        "exitCode": result.exit_code,
        "toolExecutionNotifications": execution,
        "toolConfigurationNotifications": configuration,
        "properties": {"device": result.device},
    }
    if command_line:
        invocation["commandLine"] = " ".join(command_line)
        invocation["arguments"] = list(command_line[1:])
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "cgtool",
            "version": result.version or "unknown",
            "informationUri": TOOL_URL,
            "rules": [_descriptor(r, docs_url) for r in RULES],
        }},
        "invocations": [invocation],
        "results": [_result(f, s, base_dir, index) for s, f in result.findings()],
        "columnKind": "unicodeCodePoints",
    }
    if result.version:
        run["tool"]["driver"]["semanticVersion"] = result.version
    if base_dir is not None:
        root = Path(base_dir).resolve().as_uri()
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root if root.endswith("/") else root + "/"}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(result: LintResult, *, base_dir: str | Path | None = None,
                 command_line: Sequence[str] | None = None, docs_url: str = RULES_DOC_URL) -> str:
    """The lint result as a SARIF 2.1.0 JSON document, ending in a newline."""
    log = sarif_log(result, base_dir=base_dir, command_line=command_line, docs_url=docs_url)
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
