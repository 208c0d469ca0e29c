"""The lint output formats by name: each renders a LintResult to text (see LINT_FORMATS)."""

from __future__ import annotations

import os
import sys
from typing import Callable

from cgtool.model.lint_result import LINT_FORMATS, LintResult


def _text(result: LintResult, to_tty: bool) -> str:
    from cgtool.render.text import render_text

    return render_text(result, color=to_tty and not os.environ.get("NO_COLOR"))


def _json(result: LintResult, to_tty: bool) -> str:
    from cgtool.render.json_out import render_json

    return render_json(result)


def _sarif(result: LintResult, to_tty: bool) -> str:
    from cgtool.render.sarif import render_sarif

    return render_sarif(result, base_dir=os.getcwd(), command_line=sys.argv)


def _github(result: LintResult, to_tty: bool) -> str:
    from cgtool.render.github import render_github

    return render_github(result, base_dir=os.getcwd())


def _junit(result: LintResult, to_tty: bool) -> str:
    from cgtool.render.junit import render_junit

    return render_junit(result, base_dir=os.getcwd())


def _gitlab(result: LintResult, to_tty: bool) -> str:
    from cgtool.render.gitlab import render_gitlab

    return render_gitlab(result, base_dir=os.getcwd())


RENDERERS: dict[str, Callable[[LintResult, bool], str]] = {
    "text": _text, "json": _json, "sarif": _sarif, "github": _github, "junit": _junit, "gitlab": _gitlab}
assert tuple(RENDERERS) == LINT_FORMATS, "a lint format without a renderer (or the other way round)"


def render_lint(result: LintResult, fmt: str, to_tty: bool = False) -> str:
    """`result` in format `fmt` (one of LINT_FORMATS); colour only for a terminal."""
    return RENDERERS[fmt](result, to_tty)
