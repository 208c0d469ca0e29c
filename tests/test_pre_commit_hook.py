"""The pre-commit hooks (.pre-commit-hooks.yaml): the hook's entry run as pre-commit runs it (the files that match
`files`, one call for all since it is require_serial), and, where pre-commit is installed (the `test` extras), the
real `pre-commit try-repo . cgtool-lint`: it builds the hook's virtualenv from this repository (offline: the
build backend and cgtool's dependencies come from the test's own environment) and fails on a hazard sample with
the finding."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAZARD = "samples/hazards/item_sync.py"
CHANGED = [HAZARD, "samples/mlp_inference.py", "cgtool/errors.py", "README.md", "docs/ci.md"]  # a commit's files


def hooks() -> dict[str, dict]:
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml")) as fh:
        return {h["id"]: h for h in yaml.safe_load(fh)}


def test_the_hooks_say_how_pre_commit_runs_them():
    got = hooks()
    assert set(got) == {"cgtool-lint", "cgtool-lint-system"}
    for hook in got.values():
        assert hook["entry"] == "cgtool lint --scripts-only" and hook["files"] == r"\.py$"
        assert hook["require_serial"] is True  # cgtool runs its scripts in parallel itself
    assert got["cgtool-lint"]["language"] == "python" and got["cgtool-lint-system"]["language"] == "system"


def _as_pre_commit_runs(hook: dict, files: list[str]) -> subprocess.CompletedProcess:
    """entry + args + the matching files, in one process (require_serial), as pre-commit's xargs does."""
    matching = [f for f in files if re.search(hook["files"], f)]
    argv = shlex.split(hook["entry"]) + list(hook.get("args", [])) + matching
    assert argv[0] == "cgtool"
    return subprocess.run([sys.executable, "-m", "cgtool", *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_the_hook_fails_a_commit_with_a_hazard_and_runs_only_its_scripts():
    r = _as_pre_commit_runs(hooks()["cgtool-lint"], CHANGED)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "item_sync.py:30: error: CG101 [sync]" in r.stdout
    assert "2 scripts checked" in r.stdout  # cgtool/errors.py defines no step(): passed over, not imported


def test_a_commit_without_scripts_passes():
    r = _as_pre_commit_runs(hooks()["cgtool-lint"], ["cgtool/errors.py", "tests/conftest.py", "README.md"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 scripts checked" in r.stdout


def _torch_only_path(tmp_path) -> str:
    """A folder with the current environment's packages but not cgtool: the hook's virtualenv has cgtool (built
    from this repository) and gets torch from here, as a user's additional_dependencies would give it."""
    import torch

    site = os.path.dirname(os.path.dirname(torch.__file__))
    folder = tmp_path / "site"
    folder.mkdir()
    for name in os.listdir(site):
        if "cgtool" not in name.lower() and not name.endswith(".pth"):
            os.symlink(os.path.join(site, name), folder / name)
    return str(folder)


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_pre_commit_try_repo_fails_on_the_hazard_with_the_finding(tmp_path):
    pytest.importorskip("pre_commit")
    if subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "PRE_COMMIT", "VIRTUAL_ENV"))}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "home"), PYTHONPATH=_torch_only_path(tmp_path),
               # the hook's pip builds cgtool from this repository with the build backend and dependencies already
               # on PYTHONPATH (which shadows whatever it would download): no registry, ~35 s less. pip reads
               # PIP_NO_BUILD_ISOLATION inverted: "0" turns build isolation off.
               PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", ROOT, "cgtool-lint", "--verbose",
                        "--files", HAZARD, "cgtool/errors.py"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert re.search(r"cgtool lint\.+Failed", out), out
    assert "item_sync.py:30: error: CG101 [sync] `.item()` reads a GPU value on the host" in out
    assert "1 script checked" in out
