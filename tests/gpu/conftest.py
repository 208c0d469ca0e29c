"""Fixtures of the GPU suite (`bash tests/gpu/run.sh`): the cgtool CLI run from the repository root, a shared
work folder, and `measured`, which records a test's numbers (pytest's `record_property`, and a line in
$OUT/gpu-results.txt when $OUT is set, so the numbers come back from the GPU machine)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Callable

import pytest

from gpu.runs import WORK, cgtool_run, save_artifact


@pytest.fixture(scope="session")
def work() -> str:
    os.makedirs(WORK, exist_ok=True)
    return WORK


@pytest.fixture(scope="session")
def cgtool() -> Callable[..., subprocess.CompletedProcess]:
    return cgtool_run


@pytest.fixture
def measured(request: pytest.FixtureRequest, record_property: Callable[[str, Any], None]) -> Callable[..., None]:
    """measured(detail, **numbers): the test's measured numbers, in the JUnit XML and $OUT/gpu-results.txt."""

    def record(detail: str = "", **numbers: Any) -> None:
        for key, value in numbers.items():
            record_property(key, value)
        line = f"{request.node.nodeid}: {detail}" + (f" {json.dumps(numbers, default=str)}" if numbers else "")
        print(line)
        save_artifact("gpu-results.txt", line)

    return record


@pytest.fixture(scope="session")
def sample_capture(work: str) -> Callable[[str], tuple[subprocess.CompletedProcess, str, float]]:
    """capture_of(name): `cgtool capture samples/NAME.py` once per session → (result, out folder, wall s)."""
    import time

    done: dict[str, tuple[subprocess.CompletedProcess, str, float]] = {}

    def capture_of(name: str) -> tuple[subprocess.CompletedProcess, str, float]:
        if name not in done:
            out = os.path.join(work, "capture", name)
            t0 = time.perf_counter()
            r = cgtool_run("capture", f"samples/{name}.py", "--out", out, timeout=600)
            done[name] = (r, out, time.perf_counter() - t0)
        return done[name]

    return capture_of
