"""Issue 34: an interrupted run is named by what stopped it, in every command and every lint format: one wording
and one exit status (errors.interrupted, errors.interrupted_status), shared by capture, lint and the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from lint_samples import ITEM_SYNC, MASK_INDEX

from cgtool.errors import CTRL_C, ExitCode, interrupted, interrupted_status
from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import finding
from cgtool.render.lint_formats import render_lint

STOPS = [(CTRL_C, 130), ("SIGTERM", 143), ("SIGHUP", 129)]


@pytest.mark.parametrize("stop, status", STOPS)
def test_one_wording_and_one_exit_status(stop, status):
    assert interrupted(stop) == f"interrupted ({stop})" and interrupted(stop, sentence=True) == f"Interrupted ({stop})"
    assert interrupted_status(stop) == status
    assert interrupted_status() == ExitCode.INTERRUPTED == 130


@pytest.mark.parametrize("stop, status", STOPS)
@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "junit"])
def test_every_lint_format_names_the_signal(stop, status, fmt):
    r = LintResult([ScriptResult(ITEM_SYNC, findings=[finding("CG101", file=ITEM_SYNC, line=1)])],
                   interrupted=True, stop=stop, unchecked=[MASK_INDEX])
    assert r.exit_code == status
    out = render_lint(r, fmt)
    if fmt == "json":
        summary = json.loads(out)["summary"]
        assert (summary["interrupted"], summary["interrupted_by"], summary["exit_code"]) == (True, stop, status)
        assert LintResult.from_json(json.loads(out)) == r
    else:
        assert f"interrupted ({stop})" in out
        others = {s for s, _ in STOPS} - {stop}
        assert not any(f"({other})" in out for other in others), out


SLEEPER = "import time\n\ndef step():\n    time.sleep(120)\n"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_lint_stopped_by_a_signal_names_it_and_exits_128_plus_it(tmp_path, sig):
    (tmp_path / "a.py").write_text(SLEEPER)
    (tmp_path / "b.py").write_text(SLEEPER)
    proc = subprocess.Popen([sys.executable, "-m", "cgtool", "lint", "a.py", "b.py", "-j", "1"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, NO_COLOR="1"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _worker_started(proc.pid):
        time.sleep(0.2)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert f"interrupted ({sig.name}): 2 scripts not checked" in out, out + err
    assert "Ctrl-C" not in out


def _worker_started(pid: int) -> bool:
    from cgtool.worker.lifetime import descendants

    return bool(descendants(pid))
