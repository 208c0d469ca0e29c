"""Fuzz `[tool.cgtool]` in pyproject.toml: a validated LintConfig or a clean CgtoolError (exit 2, one line naming
the file), in-process and through `cgtool lint` (which stops before running any script)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from fuzzing import examples, mutated, outcome, scratch
from hypothesis import given
from hypothesis import strategies as st

from cgtool.lint.config import KEYS, MIN_WARMUP, load_config
from cgtool.model.lint_result import LINT_FORMATS

_TMP = scratch("cgtool-fuzz-config-")
GOOD = b'''[project]
name = "demo"

[tool.cgtool]
select = ["CG1", "CG301"]
ignore = ["CG104"]
format = "sarif"
warmup = 4
timeout = 120.5
'''

toml_scalars = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str), st.floats(allow_nan=True, allow_infinity=True).map(
        lambda f: "nan" if f != f else ("inf" if f == float("inf") else "-inf" if f == float("-inf") else repr(f))),
    st.booleans().map(lambda b: "true" if b else "false"),
    st.text(max_size=12).map(lambda t: '"' + t.replace("\\", "\\\\").replace('"', '\\"').encode("unicode_escape").decode() + '"'),
    st.sampled_from(['"CG101"', '"CG9"', '"cg1"', '"text"', '"junit"', "1979-05-27", "{}", "{a = 1}"]),
)
toml_values = st.one_of(toml_scalars, st.lists(toml_scalars, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"))


@st.composite
def cgtool_tables(draw: st.DrawFn) -> bytes:
    keys = draw(st.lists(st.sampled_from([*KEYS, "Select", "jobs", "warm up"]), max_size=6, unique=True))
    lines = [f'"{k}" = {draw(toml_values)}' if " " in k else f"{k} = {draw(toml_values)}" for k in keys]
    header = draw(st.sampled_from(["[tool.cgtool]", "[tool.cgtool]", "[[tool.cgtool]]", "[tool]\ncgtool ="]))
    if header.endswith("="):
        return f"{header} {draw(toml_values)}\n".encode()
    return (header + "\n" + "\n".join(lines) + "\n").encode()


def load(data: bytes):
    folder = tempfile.mkdtemp(dir=_TMP)
    with open(os.path.join(folder, "pyproject.toml"), "wb") as fh:
        fh.write(data)
    config = outcome(load_config, folder)
    if config is not None:
        assert all(isinstance(p, str) for p in config.select + config.ignore)
        assert config.format is None or config.format in LINT_FORMATS
        assert config.warmup is None or (isinstance(config.warmup, int) and config.warmup >= MIN_WARMUP)
        assert config.timeout is None or config.timeout > 0
    return config


@examples(200)
@given(cgtool_tables())
def test_generated_tables(data):
    load(data)


@examples(150)
@given(mutated(GOOD))
def test_mutated_pyproject(data):
    load(b"# cgtool\n" + data)


@examples(10, shrink=False)
@given(cgtool_tables())
def test_end_to_end_through_lint(data):
    folder = tempfile.mkdtemp(dir=_TMP)
    with open(os.path.join(folder, "pyproject.toml"), "wb") as fh:
        fh.write(data)
    script = os.path.join(folder, "s.py")
    with open(script, "w") as fh:
        fh.write("def step():\n    pass\n")
    config = outcome(load_config, folder)
    if config is not None:
        return  # a valid configuration would run the script: the in-process tests cover it
    r = subprocess.run([sys.executable, "-m", "cgtool", "lint", script], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, NO_COLOR="1"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"error: {os.path.join(folder, 'pyproject.toml')}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
