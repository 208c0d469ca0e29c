"""The corpus of library models (tests/realworld/: transformers, torchvision, timm, torch_geometric) through `cgtool lint` on
the CPU: no error finding on a clean model, every `# expect:` marker of a hazard found at the user's line.
The same corpus runs on the GPU in tests/gpu/test_realworld_gpu.py, beside plain-PyTorch truth (truth.py).
A script whose library is not installed, or does not import with this torch, is skipped with the reason."""

from __future__ import annotations

import ast
import functools
import glob
import importlib
import json
import os
import subprocess
import sys

import pytest
from expect_markers import markers

from cgtool.model.rules import GPU_ONLY_RULES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "realworld")
LIBRARIES = ("transformers", "torchvision", "timm", "torch_geometric")
CLEAN = sorted(glob.glob(os.path.join(CORPUS, "clean", "*.py")))
HAZARDS = sorted(glob.glob(os.path.join(CORPUS, "hazards", "*.py")))


@functools.cache
def unusable(library: str) -> str | None:
    """Why `library` cannot run here (not installed, or built for another torch), or None."""
    try:
        importlib.import_module(library)
    except Exception as exc:  # noqa: BLE001 - a mismatched wheel raises RuntimeError at import
        return f"{library} does not import here: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return None


def libraries_of(path: str) -> set[str]:
    tree = ast.parse(open(path, encoding="utf-8").read())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    if "timm" in names:
        names.add("torchvision")  # timm imports torchvision
    return names & set(LIBRARIES)


def runnable(paths: list[str]) -> list[str]:
    return [p for p in paths if not any(unusable(lib) for lib in libraries_of(p))]


@functools.lru_cache(maxsize=1)
def lint_corpus() -> dict[str, dict]:
    """One `cgtool lint --cpu` over every runnable script (one worker each, two at a time)."""
    paths = runnable(CLEAN + HAZARDS)
    if not paths:
        return {}
    r = subprocess.run([sys.executable, "-m", "cgtool", "lint", *paths, "--cpu", "--format", "json", "-j", "2",
                        "--timeout", "600"], capture_output=True, text=True, cwd=ROOT, timeout=3000)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    return {os.path.basename(s["path"]): s for s in json.loads(r.stdout)["scripts"]}


def skip_unless_runnable(path: str) -> None:
    for lib in sorted(libraries_of(path)):
        why = unusable(lib)
        if why:
            pytest.skip(why)


def test_the_corpus_has_eight_clean_models_and_four_hazards_from_four_libraries():
    assert len(CLEAN) >= 8 and len(HAZARDS) >= 4
    assert set().union(*(libraries_of(p) for p in CLEAN)) == set(LIBRARIES)
    assert set().union(*(libraries_of(p) for p in HAZARDS)) == set(LIBRARIES)
    assert all(markers(p) for p in HAZARDS) and not any(markers(p) for p in CLEAN)


@pytest.mark.parametrize("path", CLEAN, ids=os.path.basename)
def test_a_clean_library_model_has_no_error_finding_on_cpu(path):
    skip_unless_runnable(path)
    s = lint_corpus()[os.path.basename(path)]
    assert s["errors"] == [] and s["status"] == "analysed"
    assert [f"{f['rule']}@{f['line']}: {f['message']}" for f in s["findings"] if f["severity"] == "error"] == []


@pytest.mark.parametrize("path", HAZARDS, ids=os.path.basename)
def test_a_library_hazard_is_found_at_the_users_line(path):
    skip_unless_runnable(path)
    s = lint_corpus()[os.path.basename(path)]
    found = {(f["line"], f["rule"]): f for f in s["findings"] if f["severity"] == "error"}
    for line, rule in [(ln, r) for ln, r in markers(path) if r not in GPU_ONLY_RULES]:  # CG503: GPU only
        assert (line, rule) in found, f"{rule}@{line} not in {sorted(found)}"
        assert found[(line, rule)]["file"] == path
