"""`cgtool lint --format json`: the LintResult as JSON (schema in cgtool/lint_result.py)."""

from __future__ import annotations

import json

from cgtool.model.lint_result import LintResult


def render_json(result: LintResult, *, indent: int | None = 2) -> str:
    """The lint result as a JSON document, ending in a newline."""
    return json.dumps(result.to_json(), indent=indent, ensure_ascii=False) + "\n"
