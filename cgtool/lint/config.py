"""Lint defaults from `[tool.cgtool]` in the nearest pyproject.toml that has one, validated.

Keys: select, ignore (lists of rule ids or prefixes), format (text|json|sarif|github|junit),
warmup (traced iterations) and timeout (seconds), in the ranges of
cgtool/model/limits.py that the command-line options use. Command-line options win.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgtool.errors import CgtoolError, ExitCode
from cgtool.files.inputs import CONFIG, parse_toml, read_input, read_text
from cgtool.lint.filter import normalize_patterns
from cgtool.model.limits import check_number
from cgtool.model.lint_result import LINT_FORMATS

KEYS = ("select", "ignore", "format", "warmup", "timeout")
MIN_WARMUP = 2  # lint compares warmup iterations with each other (shapes, branches): one is not enough


@dataclass(frozen=True)
class LintConfig:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    format: str | None = None
    warmup: int | None = None
    timeout: float | None = None
    path: str | None = None  # the pyproject.toml it came from; None for the built-in defaults


def find_pyproject(start_dir: str | Path) -> Path | None:
    """The nearest pyproject.toml at or above `start_dir` that mentions a [tool.cgtool] table."""
    start = Path(start_dir).resolve()
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        # not only regular files: a FIFO, device or dangling link named pyproject.toml is refused by the reader
        if os.path.lexists(candidate) and not candidate.is_dir() and _mentions_cgtool(candidate):
            return candidate
    return None


def _mentions_cgtool(path: Path) -> bool:
    # A cheap text test first: unrelated pyproject files are never parsed (nor are their TOML errors ours).
    # A pyproject.toml that is a FIFO, a device or too large does mention it: load_config then says what it is.
    try:
        return b"cgtool" in read_input(str(path), CONFIG)
    except CgtoolError:
        return True


def load_config(start_dir: str | Path) -> LintConfig:
    """The [tool.cgtool] settings that apply to `start_dir`; LintConfig() when there are none.

    Raises CgtoolError (exit 2) naming the file and key for an unknown key or a bad value.
    """
    path = find_pyproject(start_dir)
    if path is None:
        return LintConfig()
    text = read_text(str(path), CONFIG)  # the one reader: regular files only, bounded size; TOML depth bounded too
    tool = parse_toml(text, str(path), CONFIG).get("tool", {})
    if not isinstance(tool, dict):
        raise CgtoolError(f"{path}: `tool` must be a table ([tool.cgtool] lives in it)", ExitCode.USAGE)
    table = tool.get("cgtool")
    if table is None:
        return LintConfig()
    return parse_config(table, str(path))


def parse_config(table: Any, path: str) -> LintConfig:
    """A validated LintConfig from the [tool.cgtool] table read from `path`."""
    where = f"{path}: [tool.cgtool]"
    if not isinstance(table, dict):
        raise CgtoolError(f"{where} must be a table", ExitCode.USAGE)
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise CgtoolError(f"{where} has unknown key {_show(unknown[0])}; known keys: {', '.join(KEYS)}", ExitCode.USAGE)
    return LintConfig(
        select=_rule_list(table, "select", where),
        ignore=_rule_list(table, "ignore", where),
        format=_format(table, where),
        warmup=_warmup(table, where),
        timeout=_timeout(table, where),
        path=path,
    )


def _rule_list(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CgtoolError(f'{where} {key} must be a list of rule ids or prefixes, like ["CG101", "CG3"]; '
                          f"got {_show(value)}", ExitCode.USAGE)
    return normalize_patterns(value, f"{where} {key}")


def _format(table: dict[str, Any], where: str) -> str | None:
    value = table.get("format")
    if value is not None and value not in LINT_FORMATS:
        raise CgtoolError(f"{where} format must be one of {', '.join(LINT_FORMATS)}; got {_show(value)}", ExitCode.USAGE)
    return value


def _warmup(table: dict[str, Any], where: str) -> int | None:
    value = table.get("warmup")
    return None if value is None else int(check_number(value, "lint_warmup", f"{where} warmup"))


def _timeout(table: dict[str, Any], where: str) -> float | None:
    value = table.get("timeout")
    return None if value is None else float(check_number(value, "timeout", f"{where} timeout"))


def _show(value: Any) -> str:
    """A TOML value as TOML would spell it (roughly), not as Python's repr: "x", [1, 2], true."""
    import json

    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
