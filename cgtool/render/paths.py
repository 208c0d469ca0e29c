"""Paths as lint outputs show them: relative to a base directory, with forward slashes."""

from __future__ import annotations

import os
from pathlib import Path


def relative_path(path: str, base_dir: str | Path | None = None) -> str | None:
    """`path` relative to `base_dir` in POSIX form; None when it lies outside `base_dir`.

    Without a base dir the path is returned as given (with forward slashes).
    """
    if base_dir is None:
        return Path(path).as_posix()
    base = Path(base_dir).resolve()
    target = Path(path)
    target = (target if target.is_absolute() else Path.cwd() / target).resolve()
    try:
        return target.relative_to(base).as_posix()
    except ValueError:
        return None


def display_path(path: str, base_dir: str | Path | None = None) -> str:
    """relative_path, falling back to the path as given when it lies outside `base_dir`."""
    rel = relative_path(path, base_dir)
    return rel if rel is not None else Path(path).as_posix().replace(os.sep, "/")
