"""Fuzz the command line (issue 23): every numeric option of every command with numbers, non-numbers, NaN, inf
and huge values; the same values in `[tool.cgtool]`; and output paths that name the input. Properties: exit 2
with click's message naming the option (or a clean CgtoolError), never a traceback; the CLI and the config
accept exactly the same values; an accepted value is finite and in range; no input is ever overwritten."""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil

from fuzzing import DATA, LEAKS, examples, scratch
from hypothesis import given
from hypothesis import strategies as st

from cgtool.cli import main
from cgtool.errors import CgtoolError
from cgtool.lint.config import parse_config
from cgtool.model.limits import LIMITS, check_number

_TMP = scratch("cgtool-fuzz-cli-")
MISSING = os.path.join(_TMP, "missing", "s.py")  # every command stops on it after parsing its options
OPTIONS = [("capture", "--timeout", "timeout"), ("capture", "--warmup", "warmup"), ("capture", "--modules", "modules"),
           ("capture", "--nproc-per-node", "nproc"), ("lint", "--warmup", "lint_warmup"), ("lint", "--timeout", "timeout"),
           ("lint", "--jobs", "jobs"), ("lint", "--nproc-per-node", "nproc"), ("bench", "--budget-s", "budget_s"),
           ("bench", "--ci", "ci"), ("bench", "--iters", "iters"), ("bench", "--timeout", "timeout"),
           ("dot", "--max-nodes", "max_nodes")]

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30),
    st.integers(-3, 70), st.floats(min_value=-1, max_value=1e6))
number_text = st.one_of(numbers.map(str), st.sampled_from(["nan", "-nan", "inf", "1e400", "0x10", " 3", "3.0", "", "1_000",
                                                           "٣", "NaN", "1e-9", "+5", "99999999999999999999"]),
                        st.text(max_size=8))


def run(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


@examples(ci=300, shrink=False)
@given(option=st.sampled_from(OPTIONS), value=number_text)
def test_numeric_options(option, value):
    command, flag, limit = option
    code, err = run([command, MISSING, flag, value])
    assert code == 2, err
    assert not LEAKS.search(err), err
    try:
        number = check_number(value, limit, flag, from_text=True)
    except CgtoolError:
        number = None
    rejected = "Invalid value" in err
    assert rejected == (number is None), (value, err)
    if number is not None:
        assert math.isfinite(number) and LIMITS[limit].low <= number <= LIMITS[limit].high


@examples(ci=150)
@given(key=st.sampled_from(["warmup", "timeout"]), value=st.one_of(numbers, st.booleans(), st.text(max_size=6)))
def test_config_numbers_follow_the_cli_rules(key, value):
    limit = "lint_warmup" if key == "warmup" else "timeout"
    try:
        config = parse_config({key: value}, "pyproject.toml")
        in_config = getattr(config, key)
    except CgtoolError as exc:
        assert exc.message.startswith(f"pyproject.toml: [tool.cgtool] {key} must be"), exc.message
        in_config = None
    if isinstance(value, (bool, str)) or (isinstance(value, float) and limit == "lint_warmup"):
        assert in_config is None  # TOML's types: a count is an integer, a string is not a number
        return
    try:
        on_cli = check_number(repr(value), limit, "--" + key, from_text=True)
    except CgtoolError:
        on_cli = None
    assert in_config == on_cli, (value, in_config, on_cli)


@examples(ci=100)
@given(spelling=st.sampled_from(["{d}/in.dot", "./in.dot", "in.dot", "{d}/./in.dot", "{d}/link.dot", "{d}/new.dot",
                                 "{d}/other.dot"]),
       name=st.sampled_from(["mlp20_inference.dot", "kinds_all.dot"]))
def test_outputs_never_overwrite_the_input(spelling, name):
    folder = os.path.join(_TMP, "out")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    shutil.copy(os.path.join(DATA, name), os.path.join(folder, "in.dot"))
    shutil.copy(os.path.join(DATA, name), os.path.join(folder, "other.dot"))
    os.symlink("in.dot", os.path.join(folder, "link.dot"))
    before = open(os.path.join(folder, "in.dot"), "rb").read()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        code, err = run(["dot", "in.dot", "-o", spelling.format(d=folder)])
    finally:
        os.chdir(cwd)
    assert open(os.path.join(folder, "in.dot"), "rb").read() == before
    assert code in (0, 2, 3) and not LEAKS.search(err), err
    if os.path.samefile(os.path.join(folder, spelling.format(d=folder)), os.path.join(folder, "in.dot")):
        assert code == 2 and "is the input graph" in err
