"""`cgtool capture` through the real CLI and worker, on CPU (no CUDA device here)."""

import json
import os

import pytest
import torch
from conftest import DATA, ROOT

import cgtool

SCRIPTS = os.path.join(DATA, "scripts")
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only behaviour")


def test_missing_file_exit_2(run_cli, tmp_path):
    r = run_cli("capture", tmp_path / "nope.py")
    assert r.returncode == 2
    assert "No such file" in r.stderr
    assert "Traceback" not in r.stderr


def test_syntax_error_exit_2(run_cli):
    r = run_cli("capture", os.path.join(SCRIPTS, "syntax_error.py"))
    assert r.returncode == 2
    assert "syntax_error.py:3" in r.stderr and "Traceback" not in r.stderr


def test_no_entry_exit_2_shows_contract(run_cli, tmp_path):
    r = run_cli("capture", os.path.join(SCRIPTS, "no_entry.py"), "--out", tmp_path / "o")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "has no function `step()`" in r.stdout
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["status"] == "script-error"


def test_cpu_only_run_writes_report_exit_3(run_cli, tmp_path):
    out = tmp_path / "out"
    r = run_cli("capture", os.path.join(ROOT, "samples", "mlp_inference.py"), "--out", out)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "no CUDA device" in r.stdout
    # the CPU analysis is shown (what lint checks), and what a GPU adds
    assert "CPU analysis" in r.stdout and "no hazard found" in r.stdout and "CG501" in r.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["schema"] == 4
    assert report["status"] == "cpu-only"
    assert report["device"] == "cpu"
    assert report["graph"] is None
    assert report["environment"]["torch"].startswith("2.")
    assert not [p for p in os.listdir(out) if p.startswith(".")]  # no temporary files left behind


def test_json_to_stdout(run_cli, tmp_path):
    r = run_cli("capture", os.path.join(SCRIPTS, "good_tuple.py"), "--json", "--out", tmp_path / "o")
    assert r.returncode == 3
    data = json.loads(r.stdout)
    assert data["status"] == "cpu-only" and data["entry"] == "step"


def test_setup_raising_shows_user_traceback(run_cli, tmp_path):
    r = run_cli("capture", os.path.join(SCRIPTS, "setup_raises.py"), "--out", tmp_path / "o")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "setup_raises.py" in r.stdout and "missing_method" in r.stdout
    # no frame of cgtool's own package (the clone's folder may be named cgtool too: issue 23)
    assert os.path.join(os.path.dirname(os.path.abspath(cgtool.__file__)), "") not in r.stdout
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    err = report["errors"][0]
    assert err["phase"] == "setup" and err["type"] == "AttributeError"
    assert [f["line"] for f in err["frames"]] == [9, 5]


def test_timeout_becomes_a_report(run_cli, tmp_path):
    r = run_cli("capture", os.path.join(SCRIPTS, "hangs.py"), "--timeout", "3", "--out", tmp_path / "o")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "time limit of 3 s (--timeout" in r.stdout
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["status"] == "worker-failed" and report["errors"][0]["type"] == "timeout"


def test_crash_becomes_a_report(run_cli, tmp_path):
    r = run_cli("capture", os.path.join(SCRIPTS, "crashes.py"), "--out", tmp_path / "o")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "SIGSEGV" in r.stdout
    assert "about to crash" in r.stdout  # the script's last output is shown
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["errors"][0]["type"] == "crash"


def test_unwritable_out_dir_exit_3(run_cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run_cli("capture", os.path.join(SCRIPTS, "good_tuple.py"), "--out", blocker / "sub")
    assert r.returncode == 3
    assert "Cannot write to the output folder" in r.stderr


def test_help_documents_contract_and_exit_codes(run_cli):
    r = run_cli("capture", "--help")
    assert r.returncode == 0
    for text in ("setup(device)", "inputs(i, device)", "step(...)", "Exit codes", "graph.driver.dot"):
        assert text in r.stdout


def test_help_does_not_import_torch(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from cgtool.cli import cli; "
            "assert 'torch' not in sys.modules and 'cuda.bindings' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ctrl_c_stops_the_worker_and_keeps_the_report(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "o"
    proc = subprocess.Popen([sys.executable, "-m", "cgtool", "capture", os.path.join(SCRIPTS, "hangs.py"), "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, NO_COLOR="1"))
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout
    assert "Interrupted (Ctrl-C)" in stdout
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "worker-failed" and report["errors"][0]["type"] == "interrupted"


def test_sys_exit_in_step_is_the_scripts_error(run_cli, tmp_path):
    r = run_cli("capture", os.path.join(SCRIPTS, "exits.py"), "--out", tmp_path / "o")
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    err = report["errors"][0]
    assert err["type"] == "SystemExit" and "stop here" in err["message"] and err["frames"][-1]["line"] == 8


def test_lint_named_entry_and_unwritable_output(run_cli, tmp_path):
    target = os.path.join(SCRIPTS, "named_entry.py") + ":train_step"
    r = run_cli("lint", target, "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["scripts"][0]["entry"] == "train_step"
    r = run_cli("lint", target, "-o", tmp_path / "missing" / "x.txt")
    assert r.returncode == 3 and "Cannot write --output" in r.stderr


def test_setup_and_inputs_returning_one_name_is_a_contract_error(run_cli, tmp_path):
    script = tmp_path / "clash.py"
    script.write_text(
        "import torch\n"
        "def setup(device):\n    return {'x': torch.ones(2, device=device)}\n"
        "def inputs(i, device):\n    return {'x': torch.ones(2, device=device)}\n"
        "def step(x):\n    return x * 2\n")
    r = run_cli("capture", script, "--out", tmp_path / "out")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "warmup failed: setup and inputs both return the argument(s) ['x']" in r.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["errors"][0]["type"] == "usage" and report["errors"][0]["phase"] == "warmup"
