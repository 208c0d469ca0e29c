"""Issue 23 through the real CLI: outputs never destroyed, suppressions that cannot switch a gate off in
silence, numeric options and config values in range, output that never crashes or leaks control characters,
and the inputs that used to hang or print the wrong words."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import DATA

from cgtool.lint.filter import filter_findings
from cgtool.model.rules import finding

MLP = os.path.join(DATA, "mlp20_inference.dot")
HOST_READ = "import torch\n\ndef step():\n    x = torch.ones(2)\n    return x.sum().item(){comment}\n"


# -- outputs ---------------------------------------------------------------------------------------------

def test_failed_bench_keeps_the_baseline(run_cli, tmp_path):
    (tmp_path / "s.py").write_text("import torch\ndef step():\n    return torch.ones(2)\n")
    (tmp_path / "base.json").write_text("KEEP\n")
    r = run_cli("bench", "s.py", "--out", "base.json", "-q")
    assert r.returncode == 3 and (tmp_path / "base.json").read_text() == "KEEP\n"
    assert "base.json was kept" in r.stderr


def test_dot_output_that_is_its_input_is_refused(run_cli, tmp_path):
    shutil.copy(MLP, tmp_path / "in.dot")
    before = (tmp_path / "in.dot").read_bytes()
    r = run_cli("dot", "in.dot", "-o", "./in.dot")
    assert r.returncode == 2 and "is the input graph of this run" in r.stderr
    assert (tmp_path / "in.dot").read_bytes() == before


@pytest.mark.parametrize("args", [["-o", "victim.py", "victim.py"], ["-o", "./victim.py", "."]])
def test_lint_output_that_is_a_script_is_refused(run_cli, tmp_path, args):
    source = HOST_READ.format(comment="")
    (tmp_path / "victim.py").write_text(source)
    r = run_cli("lint", *args)
    assert r.returncode == 2 and "is a script of this run" in r.stderr
    assert (tmp_path / "victim.py").read_text() == source


def test_report_json_that_is_a_folder_says_so_once(run_cli, tmp_path):
    (tmp_path / "o" / "report.json").mkdir(parents=True)
    (tmp_path / "s.py").write_text("def step():\n    pass\n")
    r = run_cli("capture", "s.py", "--out", "o", "-q")
    assert r.returncode == 2 and "it is a folder" in r.stderr
    assert ".." not in r.stderr and "free space" not in r.stderr


# -- suppressions ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("comment", ["  # cgtool: ignore[CG101", "  # cgtool: ignore[", "  # cgtool: ignore CG101",
                                     "  # cgtool: ignore[CG101]garbage", "  # cgtool: ignore[CG999]"])
def test_a_bad_suppression_is_a_finding_and_suppresses_nothing(tmp_path, comment):
    path = tmp_path / "s.py"
    path.write_text(HOST_READ.format(comment=comment))
    kept = filter_findings([finding("CG101", file=str(path), line=5)], files=[str(path)])
    assert sorted(f.rule for f in kept) == ["CG001", "CG101"]


@pytest.mark.parametrize("comment", ["  # cgtool: ignore[CG101]", "  # cgtool: ignore", "  # cgtool: ignore[CG1] why"])
def test_a_good_suppression_still_suppresses(tmp_path, comment):
    path = tmp_path / "s.py"
    path.write_text(HOST_READ.format(comment=comment))
    assert filter_findings([finding("CG101", file=str(path), line=5)], files=[str(path)]) == []


def test_lint_fails_on_a_malformed_suppression(run_cli, tmp_path):
    (tmp_path / "s.py").write_text(HOST_READ.format(comment="  # cgtool: ignore[CG101"))
    r = run_cli("lint", "s.py")
    assert r.returncode == 1 and "CG001" in r.stdout and "CG101" in r.stdout


# -- numbers ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command, option, value", [
    ("capture", "--timeout", "nan"), ("capture", "--timeout", "inf"), ("capture", "--warmup", "1000000"),
    ("lint", "--timeout", "nan"), ("lint", "--warmup", "99999999999999999999"), ("bench", "--ci", "nan"),
    ("bench", "--fail-if-slower", "nan"), ("bench", "--budget-s", "inf"), ("dot", "--fail-on-growth", "nan"),
    ("dot", "--max-nodes", "1e400"), ("lint", "--jobs", "100000")])
def test_numeric_options_are_finite_and_in_range(run_cli, tmp_path, command, option, value):
    target = "x.dot" if command == "dot" else "s.py"
    extra = ["--diff", "x.dot"] if option == "--fail-on-growth" else []
    r = run_cli(command, target, *extra, option, value)
    assert r.returncode == 2 and f"'{option}'" in r.stderr and "Invalid value" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("body, words", [("warmup = 99999999999999999999", "warmup must be a whole number"),
                                         ("timeout = 1e-9", "timeout must be a finite number from 1"),
                                         ("timeout = nan", "timeout must be a finite number")])
def test_config_numbers_follow_the_cli_rules_and_name_the_file(run_cli, tmp_path, body, words):
    (tmp_path / "pyproject.toml").write_text(f"[tool.cgtool]\n{body}\n")
    (tmp_path / "s.py").write_text("def step():\n    pass\n")
    r = run_cli("lint", "s.py")
    assert r.returncode == 2 and words in r.stderr and "pyproject.toml: [tool.cgtool]" in r.stderr


# -- what reaches the terminal -------------------------------------------------------------------------

def test_ascii_stdout_gets_ascii_stand_ins(run_cli, tmp_path):
    r = run_cli("dot", MLP, env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and "Traceback" not in r.stderr and "nodes" in r.stdout


def test_control_characters_in_kernel_names_are_escaped(run_cli, tmp_path):
    text = open(MLP).read().replace("cublasGemv", "\x1b[2JcublasGemv")
    (tmp_path / "esc.dot").write_text(text)
    r = run_cli("dot", "esc.dot")
    assert r.returncode == 0 and "\x1b" not in r.stdout and "\\x1b[2J" in r.stdout


def test_a_huge_message_and_deep_recursion_are_shortened(run_cli, tmp_path):
    (tmp_path / "big.py").write_text("def step():\n    raise ValueError('x' * 10_000_000)\n")
    (tmp_path / "rec.py").write_text("def f(n):\n    return f(n + 1)\n\ndef step():\n    f(0)\n")
    big = run_cli("capture", "big.py", "-q", "--out", "o1")
    assert big.returncode == 1 and len(big.stdout) < 10_000 and "more characters" in big.stdout
    rec = run_cli("capture", "rec.py", "-q", "--out", "o2")
    assert rec.returncode == 1 and rec.stdout.count("return f(n + 1)") < 10 and "repeated" in rec.stdout
    frames = json.loads((tmp_path / "o2" / "report.json").read_text())["errors"][0]["frames"]
    assert len(frames) < 10 and frames[-1]["function"] == "f"


# -- inputs and words ----------------------------------------------------------------------------------

def test_dot_reads_a_utf8_bom_and_refuses_huge_json_numbers(run_cli, tmp_path):
    (tmp_path / "bom.dot").write_bytes(b"\xef\xbb\xbf" + open(MLP, "rb").read())
    assert run_cli("dot", "bom.dot").returncode == 0
    (tmp_path / "j.json").write_text('{"nodes": [], "edges": [], "x": ' + "9" * 5000 + "}")
    r = run_cli("dot", "j.json")
    assert r.returncode == 2 and "too long" in r.stderr and "Traceback" not in r.stderr


def test_fifos_are_refused_not_waited_on(run_cli, tmp_path):
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / "pipe.py")
    (tmp_path / "d" / "a.py").write_text("def step():\n    pass\n")
    os.mkfifo(tmp_path / "p.py")
    assert run_cli("lint", "d", timeout=120).returncode == 0
    for command in ("lint", "capture"):
        r = run_cli(command, "p.py", timeout=60)
        assert r.returncode == 2 and "not a regular file" in r.stderr


def test_async_step_is_refused(run_cli, tmp_path):
    (tmp_path / "a.py").write_text("async def step():\n    pass\n")
    r = run_cli("capture", "a.py", "-q", "--out", "o")
    assert r.returncode == 2 and "async def" in r.stdout


@pytest.mark.parametrize("body", ["    raise ValueError('boom')\n", "    import sys\n    sys.exit(5)\n"])
def test_a_step_that_raises_is_not_called_did_not_run(run_cli, tmp_path, body):
    (tmp_path / "r.py").write_text("def step():\n" + body)
    r = run_cli("capture", "r.py", "-q", "--out", "o")
    assert r.returncode == 1 and "did not run" not in r.stdout and "the step raised during warmup" in r.stdout


def test_a_deleted_working_folder_is_named(tmp_path):
    (tmp_path / "s.py").write_text("def step():\n    pass\n")
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.run(f"cd {gone} && rmdir {gone} && {sys.executable} -m cgtool capture {tmp_path / 's.py'}",
                          shell=True, capture_output=True, text=True, timeout=120,
                          # absolute entries only: an editable install adds a path hook name, which Python 3.11 cannot
                          # make absolute in a deleted folder ("Fatal Python error: error evaluating path")
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if os.path.isabs(p))))
    assert proc.returncode == 3 and "current folder no longer exists" in proc.stderr


def test_lint_checks_a_script_once_however_it_is_spelled(run_cli, tmp_path):
    (tmp_path / "a.py").write_text(HOST_READ.format(comment=""))
    r = run_cli("lint", "a.py", "a.py", "./a.py", "--format", "json")
    assert len(json.loads(r.stdout)["scripts"]) == 1
