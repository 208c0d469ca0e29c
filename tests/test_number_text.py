"""Issue 34: a number written as text (every numeric option, --sizes, --batch-range, --memory-budget, a histogram's
text keys) is ASCII: digits 0-9, a sign, a point, an exponent; `٣` (another script's digit), `1_0` (Python's
separator), an empty --sizes and an empty entry in it are usage errors that say why (model/limits.parse_number)."""

from __future__ import annotations

import contextlib
import io

import pytest

from cgtool.bench.size_plan import parse_bytes, parse_histogram, parse_sizes
from cgtool.cli import main
from cgtool.errors import CgtoolError
from cgtool.model.limits import NUMBER_TEXT, check_number, parse_number


@pytest.mark.parametrize("text, whole, number", [("3", True, 3), (" +3 ", True, 3), ("-3", True, -3), ("3", False, 3.0),
                                                 ("1e3", False, 1000.0), (".5", False, 0.5), ("5.", False, 5.0),
                                                 ("1e3", True, None), ("1.5", True, None), ("٣", True, None),
                                                 ("٣", False, None), ("1_0", True, None), ("1_0", False, None),
                                                 ("१२", True, None), ("", True, None), ("inf", False, None),
                                                 ("nan", False, None), ("0x10", True, None), ("9" * 5000, True, None),
                                                 ("３", True, None)])
def test_parse_number(text, whole, number):
    assert parse_number(text, whole) == number


def run(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


@pytest.mark.parametrize("args", [["capture", "s.py", "--warmup", "٣"], ["capture", "s.py", "--timeout", "1_0"],
                                  ["lint", "s.py", "--jobs", "²"], ["bench", "s.py", "--iters", "1_000"],
                                  ["dot", "g.dot", "--max-nodes", "٥٠٠"]])
def test_numeric_options_say_why(args):
    code, err = run(*args)
    assert code == 2 and f"({NUMBER_TEXT})" in err, err


@pytest.mark.parametrize("sizes, why", [("", "no size given"), ("  ", "no size given"),
                                        ("1,,2", "an empty size between commas in '1,,2'"),
                                        ("1,2,", "an empty size between commas"), (",1", "an empty size between commas"),
                                        ("٣,4", NUMBER_TEXT), ("1:1_0", NUMBER_TEXT)])
def test_sizes(sizes, why):
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_sizes(sizes)
    code, err = run("bench", "s.py", "--sizes", sizes)
    assert code == 2 and "Invalid value for '--sizes'" in err, err


def test_sizes_still_read():
    assert parse_sizes(" 1, 2 ,4") == [1, 2, 4] and parse_sizes("3:100")[-2:] == [96, 100]


def test_batch_range_memory_budget_and_histogram_keys():
    assert run("bench", "s.py", "--sizes", "1,2", "--batch-range", "1:1_0")[0] == 2
    assert run("bench", "s.py", "--sizes", "1,2", "--batch-range", "")[0] == 2
    assert run("bench", "s.py", "--sizes", "1,2", "--batch-range", "1:8", "--memory-budget", "1_0GiB")[0] == 2
    assert parse_bytes("512MiB") == 512 << 20
    with pytest.raises(ValueError, match="not a memory size"):
        parse_bytes("٣GiB")
    assert parse_histogram({"1": 2, "8": 1.5}) == {1: 2.0, 8: 1.5}
    assert parse_histogram([1, 1, 2.0]) == {1: 2.0, 2: 1.0}
    for bad in ({"٣": 1}, {"1_0": 1}, {"1": "٢"}, [2.5], {"1": 10**400}):
        with pytest.raises(ValueError):
            parse_histogram(bad)


def test_config_values_are_numbers_not_text():
    with pytest.raises(CgtoolError):
        check_number("٣", "warmup", "pyproject.toml: [tool.cgtool] warmup")  # TOML text is never a number
