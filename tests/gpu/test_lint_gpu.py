"""`cgtool lint samples/` on the GPU (samples/compiled/: test_compiled_gpu.py): each hazard script's
`# expect:` markers found at their lines, no error finding on the clean ones; the distributed samples run as a
world of one rank on NCCL (the cross-rank rules listed as not checked)."""

import glob
import json
import os

import pytest
from conftest import ROOT
from expect_markers import markers

from cgtool.model.rules import CROSS_RANK_RULES

pytestmark = pytest.mark.gpu
# samples/syncs/ (ops that sync by argument) is checked against plain PyTorch by test_sync_table_gpu.py
PATHS = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "samples", "**", "*.py"), recursive=True)
               if f"{os.sep}compiled{os.sep}" not in p and f"{os.sep}syncs{os.sep}" not in p)
# CGTOOL_LINT_ONLY=a.py,b.py: those samples only (by file name), for a device call too short for all of them
ONLY = {n for n in os.environ.get("CGTOOL_LINT_ONLY", "").split(",") if n}
PATHS = [p for p in PATHS if not ONLY or os.path.basename(p) in ONLY]


@pytest.fixture(scope="module")
def lint_run(cgtool):
    r = cgtool("lint", *PATHS, "--format", "json", "-j", "4", timeout=900)
    data = json.loads(r.stdout)
    return r, {s["path"]: s for s in data["scripts"]}


def test_lint_samples_exit_code_and_every_script(lint_run, measured):
    r, scripts = lint_run
    assert r.returncode == 1, r.stderr[-2000:]  # hazards present
    measured(f"{len(scripts)} scripts", scripts=len(scripts))
    assert {os.path.relpath(os.path.abspath(p), ROOT) for p in scripts} >= set(PATHS)


@pytest.mark.parametrize("path", PATHS)
def test_lint_sample(path, lint_run):
    _r, scripts = lint_run
    s = next(v for k, v in scripts.items() if os.path.abspath(k) == os.path.join(ROOT, path))
    world_of_one = f"{os.sep}distributed{os.sep}" in path
    expect = [(line, rule) for line, rule in markers(os.path.join(ROOT, path))
              if not (world_of_one and rule in CROSS_RANK_RULES)]
    found = {(f["line"], f["rule"]) for f in s["findings"]}
    if expect:
        missing = [f"{rule}@{line}" for line, rule in expect if (line, rule) not in found]
        assert not missing, f"missing {missing}; found {sorted(found)}"
    else:  # a clean script (or a distributed hazard whose only rule compares ranks): nothing wrong
        errors = [f"{f['rule']}@{f['line']}" for f in s["findings"] if f["severity"] == "error"]
        assert not errors and not s["errors"], (errors, s["errors"])
    if world_of_one:
        assert s["ranks_unchecked"] == list(CROSS_RANK_RULES)
