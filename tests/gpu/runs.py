"""Running cgtool from the GPU tests and keeping what comes back: the CLI from the repository root, reports
read back, logs saved to $OUT (what the GPU machine returns)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from conftest import ROOT

WORK = os.path.join("/tmp", f"cgtool-gpu-{os.getuid()}")  # reports and graphs the tests share within one session


def cgtool_run(*args: Any, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m cgtool ARGS` from the repository root; the timeout is each call's own."""
    full = dict(os.environ, NO_COLOR="1", COLUMNS="200", **(env or {}))
    return subprocess.run([sys.executable, "-m", "cgtool", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=full, timeout=timeout)


def read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def save_artifact(name: str, text: str) -> None:
    """A log worth bringing back (the GPU machine returns what $OUT holds); nothing without $OUT."""
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, name), "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
