"""The one reader (cgtool/files/inputs.py) and the one writer (cgtool/render/files.py, render/outputs.py) on the
cases of issue 34: caps and nesting, refusals worded alike, a failed or interrupted run's output beside the file of
value, a symlink in --out replaced rather than written through, a bounded --sizes range."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from cgtool.bench.size_plan import MAX_SWEEP_SIZES, parse_sizes
from cgtool.errors import CgtoolError
from cgtool.files.inputs import (GRAPH, MAX_NESTING, SCRIPT, InputKind, parse_json, parse_toml, read_input,
                                 read_json, read_text)
from cgtool.model.report import SCRIPT_ERROR, Report
from cgtool.render.files import failed_path, save_result
from cgtool.render.outputs import write_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the reader ---------------------------------------------------------------------------------------------------

def test_a_file_past_its_cap_is_refused_and_one_at_it_is_read(tmp_path):
    small = InputKind("a test file", 10)
    (tmp_path / "ten").write_bytes(b"x" * 10)
    (tmp_path / "eleven").write_bytes(b"x" * 11)
    assert read_input(str(tmp_path / "ten"), small) == b"x" * 10
    with pytest.raises(CgtoolError, match="larger than 0 MiB, the most cgtool reads as a test file") as info:
        read_input(str(tmp_path / "eleven"), small)
    assert info.value.exit_code == 2


def test_a_file_whose_size_lies_stops_one_byte_past_the_cap():
    # /proc files say size 0 and may be long: the read stops at cap + 1, whatever stat said
    with pytest.raises(CgtoolError, match="larger than"):
        read_input("/proc/self/maps", InputKind("a map", 8))


@pytest.mark.parametrize("make, words", [
    (lambda p: os.mkfifo(p), "is a FIFO, not a regular file; give a Python script."),
    (lambda p: os.mkdir(p), "is a folder, not a regular file; give a Python script."),
    (lambda p: os.symlink(p + ".gone", p), "which does not exist; give a Python script."),
    (lambda p: os.symlink(p, p), "a loop of symlinks."),
])
def test_specials_are_refused_at_once_in_one_wording(tmp_path, make, words):
    path = str(tmp_path / "x")
    make(path)
    start = time.monotonic()
    with pytest.raises(CgtoolError) as info:
        read_input(path, SCRIPT)
    assert time.monotonic() - start < 1 and info.value.exit_code == 2 and info.value.message.endswith(words)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_by_every_kind(device):
    for kind in (SCRIPT, GRAPH):
        with pytest.raises(CgtoolError, match=f"^{device} is a character device, not a regular file; give "):
            read_input(device, kind)


def test_json_at_the_nesting_bound_reads_and_one_deeper_is_refused():
    at = "[" * MAX_NESTING + "]" * MAX_NESTING
    assert parse_json(at, "a.json", GRAPH) is not None
    deeper = '{"k": ' * (MAX_NESTING + 1) + "1" + "}" * (MAX_NESTING + 1)
    with pytest.raises(CgtoolError, match="nested more than 64 levels deep"):
        parse_json(deeper, "b.json", GRAPH)
    # brackets inside strings nest nothing
    assert parse_json('["' + "[" * 500 + '"]', "c.json", GRAPH) == ["[" * 500]


def test_toml_nesting_is_bounded_and_comments_and_strings_do_not_count():
    deep = "[tool.cgtool]\nselect = " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(CgtoolError, match="nested more than 64 levels deep") as info:
        parse_toml(deep, "pyproject.toml")
    assert info.value.exit_code == 2
    ok = "# [[[[[[[[ {{{{\n[tool.cgtool]\nselect = [\"[[[[\", '{{{{']\nx = \"\"\"\n]]]]\"\"\"\n"
    assert parse_toml(ok, "pyproject.toml")["tool"]["cgtool"]["select"] == ["[[[[", "{{{{"]


def test_text_is_utf8_with_a_bom_dropped(tmp_path):
    (tmp_path / "a.json").write_bytes(b"\xef\xbb\xbf{\"a\": 1}")
    assert read_json(str(tmp_path / "a.json"), GRAPH) == {"a": 1}
    (tmp_path / "b.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(CgtoolError, match="not UTF-8 text"):
        read_text(str(tmp_path / "b.toml"), GRAPH)


# -- --sizes ------------------------------------------------------------------------------------------------------

def test_a_huge_sizes_range_is_refused_before_it_is_made():
    start = time.monotonic()
    with pytest.raises(ValueError, match="100,000,000,000 sizes; a sweep measures at most 256"):
        parse_sizes("1:100000000000:1")
    assert time.monotonic() - start < 0.5
    assert len(parse_sizes(f"1:{MAX_SWEEP_SIZES}:1")) == MAX_SWEEP_SIZES
    with pytest.raises(ValueError, match="at most 256"):
        parse_sizes(f"1:{MAX_SWEEP_SIZES}:1,{MAX_SWEEP_SIZES + 1}")


# -- the writer ---------------------------------------------------------------------------------------------------

def test_failed_names_sit_beside_the_file():
    assert failed_path("out/report.json") == "out/report.failed.json"
    assert failed_path("keep.txt") == "keep.failed.txt" and failed_path("plain") == "plain.failed"


def test_an_incomplete_run_writes_beside_a_saved_file_and_says_so(tmp_path, capsys):
    keep = tmp_path / "keep.txt"
    keep.write_text("of value\n")
    written = save_result(str(keep), "partial\n", complete=False)
    assert keep.read_text() == "of value\n" and open(written).read() == "partial\n"
    assert "keep.txt was kept as it was: this run did not complete" in capsys.readouterr().err
    new = tmp_path / "new.txt"
    save_result(str(new), "partial\n", complete=False)  # nothing to keep: the path itself
    assert new.read_text() == "partial\n"
    save_result(str(keep), "complete\n", complete=True)
    assert keep.read_text() == "complete\n"


def test_a_failed_capture_keeps_report_json_and_a_link_in_out_is_replaced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text('{"precious": 1}\n')
    failed = Report(script="/x/s.py", entry="step", status=SCRIPT_ERROR)
    kept = write_outputs(failed, str(out), render_svg=False, complete=False)
    assert (out / "report.json").read_text() == '{"precious": 1}\n'
    assert kept == {"report.json": str(out / "report.failed.json")} and (out / "report.failed.json").exists()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    (out / "report.json").unlink()
    (out / "report.json").symlink_to(outside)
    write_outputs(Report(script="/x/s.py", entry="step"), str(out), render_svg=False)
    assert outside.read_text() == "keep me\n" and not (out / "report.json").is_symlink()


# -- end to end ---------------------------------------------------------------------------------------------------

def _cgtool(*args, cwd, **kw):
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-m", "cgtool", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_lint_o_interrupted_by_sigterm_keeps_the_file(tmp_path):
    keep = tmp_path / "keep.txt"
    keep.write_text("of value\n")
    # a step that says it started, then waits: the signal comes while lint is surely running (CI's run of
    # mlp_inference.py once ended inside a fixed 2 s sleep, exit 0 before the signal)
    started = tmp_path / "started"
    (tmp_path / "waits.py").write_text(f"import pathlib, time\n\ndef step():\n"
                                       f"    pathlib.Path({str(started)!r}).write_text('1')\n    time.sleep(120)\n")
    proc = _cgtool("lint", "waits.py", "-o", str(keep), cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert keep.read_text() == "of value\n"
    assert "interrupted" in (tmp_path / "keep.failed.txt").read_text()
    assert "keep.txt was kept as it was" in err and "Traceback" not in err


def test_a_capture_whose_script_fails_keeps_report_json(tmp_path):
    (tmp_path / "bad.py").write_text("import no_such_module_anywhere\n\ndef step():\n    pass\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text('{"precious": 1}\n')
    proc = _cgtool("capture", "bad.py", "--out", "out", "-q", cwd=tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert (out / "report.json").read_text() == '{"precious": 1}\n'
    assert "script-error" in (out / "report.failed.json").read_text()
    assert "report.json was kept as it was" in err
