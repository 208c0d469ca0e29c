"""Fuzz the script loader on mutated real scripts: in the parent (compile_script, the folder search, the job)
a compiled script or a clean CgtoolError (exit 2), quickly; a few end to end through `cgtool lint`, where every
script gets findings or a one-line error and the run exits 0, 1 or 2 without a traceback."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile

from fuzzing import ROOT, check_error, examples, mutated, outcome, scratch
from hypothesis import given
from hypothesis import strategies as st

from cgtool.errors import CgtoolError
from cgtool.lint.run import defines_function, find_scripts
from cgtool.script.contract import compile_script, parse_target

_TMP = scratch("cgtool-fuzz-script-")
SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "samples", "**", "*.py"), recursive=True)
                 + glob.glob(os.path.join(ROOT, "tests", "data", "scripts", "*.py")))
SOURCES = [open(p, "rb").read() for p in SCRIPTS if not p.endswith("hangs.py")]
PY_TOKENS = [b"(", b")", b"[", b"]", b":", b"\n", b"    ", b"\t", b"def ", b"return ", b"import ", b"lambda ", b"'",
             b'"""', b"\\", b"# -*- coding: latin-1 -*-\n", b"# coding: nope\n", b"\x00", b"\xff", b"\xef\xbb\xbf",
             "é".encode(), b"step", b"setup", b"inputs", b"-" * 3000 + b"1", b"(" * 300, b"[" * 300]


def check(data: bytes, name: str = "script.py") -> None:
    path = os.path.join(_TMP, name)
    with open(path, "wb") as fh:
        fh.write(data)
    outcome(compile_script, path, one_line=False)  # a syntax error shows its line below the message
    assert isinstance(defines_function(path, "step"), bool)
    try:
        found = find_scripts([_TMP], "step")
    except CgtoolError as exc:
        check_error(exc)
    else:
        assert all(p.endswith(".py") for p, _ in found)


@examples(300)
@given(st.data())
def test_mutated_scripts(data):
    check(data.draw(mutated(data.draw(st.sampled_from(SOURCES)), PY_TOKENS)))


@examples(100)
@given(st.binary(max_size=500) | st.text(max_size=300).map(str.encode))
def test_random_bytes(data):
    check(data)


@examples(8)
@given(st.sampled_from(["-" * 100_000 + "1", "x" + "[0]" * 5000, "1" + "+1" * 5000, "(" * 1000 + ")" * 1000]),
       st.sampled_from(["", "def step():\n    return ", "def step():\n    pass\nx = "]))
def test_deeply_nested_source(body, prefix):
    check((prefix + body + "\n").encode())


@examples(60)
@given(st.text(max_size=40))
def test_targets(target):
    parsed = outcome(parse_target, target)  # a bad entry (`a.py:__init__`) is a clean usage error
    if parsed is not None:
        path, entry = parsed
        assert isinstance(path, str) and entry.isidentifier()


@examples(1, shrink=False)
@given(st.data())
def test_end_to_end_through_lint(data):
    """Six mutated scripts per run through the real `cgtool lint` (workers and all)."""
    folder = tempfile.mkdtemp(dir=_TMP)
    for k in range(6):
        with open(os.path.join(folder, f"m{k}.py"), "wb") as fh:
            fh.write(data.draw(mutated(data.draw(st.sampled_from(SOURCES)), PY_TOKENS)) + b"\ndef step(*a, **k):\n    pass\n")
    r = subprocess.run([sys.executable, "-m", "cgtool", "lint", folder, "--format", "json", "--timeout", "60", "-j", "2"],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, NO_COLOR="1"))
    assert r.returncode in (0, 1, 2), r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    if r.returncode != 2:
        result = json.loads(r.stdout)
        for script in result["scripts"]:
            for message in script["errors"]:
                assert "\n" not in message and "Traceback" not in message, message
