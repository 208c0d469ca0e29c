"""A script written for ranks in a plain `lint`/`capture` (no --nproc-per-node): analysed as a world of one rank
on CPU (gloo), the cross-rank rules listed as not checked; where one rank cannot serve it, one line naming
--nproc-per-node (docs/distributed.md, "A plain run: a world of one")."""

import glob
import json
import os

import pytest
from conftest import ROOT

from cgtool.script.ranks import written_for_ranks

DIST = os.path.join(ROOT, "samples", "distributed")
DIST_SAMPLES = sorted(glob.glob(os.path.join(DIST, "*.py")) + glob.glob(os.path.join(DIST, "hazards", "*.py")))


@pytest.mark.parametrize("path", DIST_SAMPLES, ids=os.path.basename)
def test_distributed_samples_are_written_for_ranks(path):
    assert written_for_ranks(path)


@pytest.mark.parametrize("source", [
    "def setup(device, rank):\n    return {}\ndef step():\n    pass\n",
    "def inputs(i, device, *, world_size):\n    return {}\ndef step():\n    pass\n",
    "import torch.distributed as dist\ndef step(x):\n    dist.all_reduce(x)\n",
    "from torch import distributed\ndef step():\n    pass\n",
    "from torch.nn.parallel import DistributedDataParallel\ndef step():\n    pass\n",
    "import torch\ndef step(x):\n    torch.distributed.all_reduce(x)\n",
])
def test_rank_signs(tmp_path, source):
    path = tmp_path / "s.py"
    path.write_text(source)
    assert written_for_ranks(str(path))


@pytest.mark.parametrize("source", [
    "import torch\ndef setup(device):\n    return {}\ndef step(rank):\n    pass\n",  # only step names rank
    "def step(:\n",  # a syntax error: the run reports it
])
def test_not_rank_scripts(tmp_path, source):
    path = tmp_path / "s.py"
    path.write_text(source)
    assert not written_for_ranks(str(path))


def test_plain_samples_are_not_written_for_ranks():
    plain = [p for p in glob.glob(os.path.join(ROOT, "samples", "**", "*.py"), recursive=True)
             if f"{os.sep}distributed{os.sep}" not in p]
    assert plain and not [p for p in plain if written_for_ranks(p)]


def test_lint_distributed_samples_as_a_world_of_one(run_cli):
    r = run_cli("lint", DIST, "--format", "json", "-j", "2", timeout=600)  # 11 scripts, each with torch on gloo
    data = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr  # one_rank_fails: CG104 on its only (and so last) rank
    by = {os.path.basename(s["path"]): s for s in data["scripts"]}
    assert len(by) == 11 and not [s for s in by.values() if s["errors"]], by
    assert all(s["ranks_unchecked"] == ["CG601", "CG603"] and s["status"] == "analysed" for s in by.values())
    assert {(f["rule"], f["line"]) for f in by["one_rank_fails.py"]["findings"]} == {("CG104", 19)}
    assert {(f["rule"], f["line"]) for f in by["barrier_in_step.py"]["findings"]} == {("CG608", 20)}
    for clean in ("fsdp2_train.py", "fsdp2_reshard_always.py", "dtensor_tp.py",
                  "only_rank_zero.py"):  # FSDP2 and DTensor run on gloo too
        assert not [f for f in by[clean]["findings"] if f["severity"] != "info"], by[clean]["findings"]
    # compiled under FSDP2: dynamo breaks at FSDP2's own hooks (a warning at torch's line), nothing else
    assert {(f["rule"], f["severity"]) for f in by["fsdp2_compiled.py"]["findings"]} == {("CG705", "warning")}
    assert "CG601" in data["summary"]["skipped_rules"] and "CG603" in data["summary"]["skipped_rules"]


def test_lint_text_lists_what_one_rank_cannot_check(run_cli):
    r = run_cli("lint", os.path.join(DIST, "tensor_parallel.py"), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "could not be analysed" not in r.stdout and "setup failed" not in r.stdout
    assert "Not checked in a world of one rank (1 script written for ranks; comparing ranks needs --nproc-per-node N" \
        in r.stdout
    assert "CG601 ranks call different collectives" in r.stdout
    assert "run as one rank: " in r.stdout and "tensor_parallel.py" in r.stdout


def test_select_leaves_out_cross_rank_rules(run_cli):
    r = run_cli("lint", os.path.join(DIST, "tensor_parallel.py"), "--select", "CG1", "--format", "json", timeout=300)
    assert json.loads(r.stdout)["scripts"][0]["ranks_unchecked"] == []


def test_collective_without_a_group_is_one_line_naming_nproc(run_cli, tmp_path):
    """The collective hides in a helper module: nothing in the script says "ranks", so it runs plain."""
    (tmp_path / "helper.py").write_text("import torch.distributed as dist\n\ndef reduce(x):\n    dist.all_reduce(x)\n")
    script = tmp_path / "hidden.py"
    script.write_text("import torch\nimport helper\n\ndef step():\n    x = torch.ones(4)\n    helper.reduce(x)\n")
    r = run_cli("lint", script, timeout=300)
    assert r.returncode == 1
    err = [ln for ln in r.stdout.splitlines() if ": error:" in ln]
    assert err == [f"{script}: error: warmup failed: it calls torch.distributed without a process group; "
                   "run it with --nproc-per-node N"]


def test_a_script_one_rank_cannot_serve_names_nproc(run_cli, tmp_path):
    script = tmp_path / "two_ranks.py"
    script.write_text("import torch\n\ndef setup(device, world_size):\n"
                      "    assert world_size >= 2, 'needs two ranks'\n    return {}\n\ndef step():\n    pass\n")
    r = run_cli("lint", script, timeout=300)
    assert r.returncode == 1
    err = [ln for ln in r.stdout.splitlines() if ": error:" in ln]
    assert len(err) == 1 and "setup failed" in err[0] and "needs two ranks" in err[0]
    assert err[0].endswith("(as a world of one rank; --nproc-per-node N runs N ranks)")


def test_plain_capture_runs_a_world_of_one(run_cli, tmp_path):
    r = run_cli("capture", os.path.join(DIST, "tensor_parallel.py"), "--out", tmp_path / "o", timeout=300)
    assert r.returncode == 3, r.stdout + r.stderr  # every rank on CPU only
    assert "on 1 rank " in r.stdout
    assert "Not checked in a world of one rank (comparing ranks needs --nproc-per-node N, N ≥ 2): CG601, CG603" in r.stdout
    assert json.loads((tmp_path / "o" / "report.json").read_text())["world_size"] == 1
