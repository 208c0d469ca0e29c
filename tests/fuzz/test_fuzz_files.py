"""Fuzz the one reader and the one writer (issue 34): FIFOs, devices, folders, dangling links, links to FIFOs, link
loops, oversized and deeply nested files as every file input of every command; and every kind of thing already at
an output path (a file of value, a link to another file, a FIFO with no reader, a folder) under complete and
failed runs. Properties: exit 2 (3 for an unwritable output) with one clean line, never a traceback, never a hang
(an alarm fails the example), never a file destroyed: no FIFO, device or link replaced that the user gave as an
input, no file outside the output folder written through a link, no saved file replaced by a failed run."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import stat
import time

from fuzzing import DATA, LEAKS, examples, scratch
from hypothesis import assume, given
from hypothesis import strategies as st

from cgtool.cli import main
from cgtool.errors import CgtoolError
from cgtool.files.inputs import GRAPH, MAX_NESTING, check_nesting, parse_json, parse_toml
from cgtool.render import files

_TMP = scratch("cgtool-fuzz-files-")
SCRIPT = os.path.join(_TMP, "s.py")
GOOD_DOT = os.path.join(DATA, "mlp20_inference.dot")
BENCH_JSON = os.path.join(DATA, "bench_sweep.json")
HANG_S = 5.0  # every refusal is immediate; an example still running after this is a hang


class Hang(BaseException):
    """Raised by the alarm in an example that blocks (a FIFO opened for reading waits forever)."""


def _setup() -> dict[str, str]:
    with open(SCRIPT, "w") as fh:
        fh.write("def step():\n    return 1\n")
    special: dict[str, str] = {}
    fifo = os.path.join(_TMP, "fifo")
    os.mkfifo(fifo)
    special["fifo"] = fifo
    for dev in ("/dev/zero", "/dev/null", "/dev/urandom"):
        special[dev] = dev
    special["folder"] = os.path.join(_TMP, "folder")
    os.mkdir(special["folder"])
    special["dangling link"] = os.path.join(_TMP, "dangling")
    os.symlink(os.path.join(_TMP, "nowhere"), special["dangling link"])
    special["link to a fifo"] = os.path.join(_TMP, "to-fifo")
    os.symlink(fifo, special["link to a fifo"])
    special["link loop"] = os.path.join(_TMP, "loop")
    os.symlink(special["link loop"], special["link loop"])
    special["sparse 600 MiB"] = os.path.join(_TMP, "huge")
    with open(special["sparse 600 MiB"], "wb") as fh:
        fh.truncate(600 * 2**20)  # past every kind's cap; sparse, so it costs no disk
    deep = os.path.join(_TMP, "deep.json")
    with open(deep, "w") as fh:
        fh.write('{"a":' * 20000 + "1" + "}" * 20000)
    special["nested JSON"] = deep
    deep_toml = os.path.join(_TMP, "deep.toml")
    with open(deep_toml, "w") as fh:
        fh.write("[tool.cgtool]\nselect = " + "[" * 20000 + "]" * 20000 + "\n")
    special["nested TOML"] = deep_toml
    return special


SPECIAL = _setup()
# Every file input of every command: (argv with {} where the file goes).
INPUTS = [("capture", "{}", "-q"), ("lint", "{}"), ("bench", "{}"), ("bench", SCRIPT, "--compare", "{}"),
          ("bench", SCRIPT, "--sizes", "1,2", "--histogram", "{}"), ("dot", "{}"), ("dot", GOOD_DOT, "--diff", "{}"),
          ("dot", GOOD_DOT, "--diff", GOOD_DOT, "--json", "--fail-on-growth", "1"),  # a control: both good
          ("bench", SCRIPT, "--compare", BENCH_JSON, "--histogram", "{}", "--sizes", "1,2")]


def _snapshot(path: str) -> tuple:
    """What must not change about an input: its type, identity and (for a regular file) content."""
    st_ = os.lstat(path)
    content = None
    if stat.S_ISREG(st_.st_mode) and st_.st_size < 2**20:
        with open(path, "rb") as fh:
            content = fh.read()
    return st_.st_mode, st_.st_ino, st_.st_rdev, content


@contextlib.contextmanager
def alarm(seconds: float):
    def ring(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run(args: list[str], seconds: float = HANG_S) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), alarm(seconds):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


def one_clean_line(err: str) -> str:
    """The error line (a syntax error quotes the user's line below it), checked for Python internals."""
    assert not LEAKS.search(err) and "Traceback" not in err, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) >= 1, err
    return lines[0]


@examples(ci=60, shrink=False)
@given(argv=st.sampled_from(INPUTS), kind=st.sampled_from(sorted(SPECIAL)))
def test_every_file_input_refuses_specials_at_once(argv, kind):
    """Every file input of every command, given a FIFO, a device, a folder, a link that leads nowhere (or in a
    loop), a file past the size cap or nested past MAX_NESTING: exit 2, one line, at once, the input untouched."""
    # a nested JSON or TOML file is a regular file: as a script, capture refuses its syntax but lint runs it (exit 1)
    assume(not (kind.startswith("nested") and argv[0] in ("lint", "bench") and argv[1] == "{}"))
    path = SPECIAL[kind]
    before = _snapshot(path)
    args = [a.replace("{}", path) for a in argv]
    start = time.monotonic()
    code, err = run(list(args))
    assert time.monotonic() - start < HANG_S
    if "{}" not in argv:
        assert code in (0, 1), err  # the control: good files, read as before
    else:
        last = one_clean_line(err)
        assert code == 2 and last.startswith(("error: ", "Error: ")), (args, code, err)
    assert _snapshot(path) == before


@examples(ci=40, shrink=False)
# a folder is no pyproject.toml, nor is JSON without [tool.cgtool]: there lint would run the script
@given(kind=st.sampled_from(sorted(set(SPECIAL) - {"folder", "nested JSON"})))
def test_a_special_pyproject_is_refused_by_lint(kind):
    """[tool.cgtool]'s pyproject.toml as a FIFO, device, link or nested too deep: lint refuses it (exit 2)."""
    folder = os.path.join(_TMP, "proj-" + "".join(c if c.isalnum() else "_" for c in kind))
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "s.py")
    with open(script, "w") as fh:
        fh.write("def step():\n    return 1\n")
    pyproject = os.path.join(folder, "pyproject.toml")
    if not os.path.lexists(pyproject):
        os.symlink(SPECIAL[kind], pyproject)
    code, err = run(["lint", script])
    one_clean_line(err)
    assert code == 2 and "pyproject.toml" in err, (kind, code, err)


# -- nesting: refused before parsing, or parsed; never a RecursionError ---------------------------------------------

@st.composite
def nested(draw: st.DrawFn, toml: bool) -> tuple[str, int]:
    """A value nested `depth` levels (lists and objects or inline tables), with bracket-laden strings inside."""
    depth = draw(st.one_of(st.integers(1, MAX_NESTING + 5), st.integers(MAX_NESTING, 3000)))
    leaf = draw(st.sampled_from(['"[[{{"', '"}]\\"]"', "1", "[]", "{}" if not toml else "{}"]))
    kinds = draw(st.lists(st.sampled_from("[{"), min_size=1, max_size=4))
    text = leaf
    extra = 1 if leaf in ("[]", "{}") else 0
    for i in range(depth):
        k = kinds[i % len(kinds)]
        if k == "[":
            text = f"[{text}]"
        else:
            text = f"{{k = {text}}}" if toml else f'{{"k": {text}}}'
    return text, depth + extra


@examples(ci=120)
@given(doc=nested(toml=False))
def test_json_nesting_is_bounded(doc):
    text, depth = doc
    if len(text) > 2_000_000:
        return
    try:
        parse_json(text, "x.json", GRAPH)
        accepted = True
    except CgtoolError as exc:
        assert "nested more than" in exc.message and exc.exit_code == 2, exc.message
        accepted = False
    assert accepted == (depth <= MAX_NESTING), (depth, accepted)


@examples(ci=120)
@given(doc=nested(toml=True))
def test_toml_nesting_is_bounded(doc):
    text, depth = doc
    toml = f"# a [[[[ comment\n[tool.cgtool]\nselect = {text}\n"
    try:
        parse_toml(toml, "pyproject.toml")
        accepted = True
    except CgtoolError as exc:
        assert exc.exit_code == 2, exc.message
        assert "nested more than" in exc.message or "not valid TOML" in exc.message, exc.message
        accepted = False
    if depth <= MAX_NESTING:
        assert accepted, depth
    else:
        assert not accepted, depth


@examples(ci=60)
@given(text=st.text(alphabet='[]{}"\\ ab,:#\n\'', max_size=400))
def test_nesting_check_never_raises_anything_else(text):
    with alarm(HANG_S):
        try:
            check_nesting(text, "f", GRAPH)
        except CgtoolError as exc:
            assert exc.exit_code == 2


# -- outputs: what is already there is never destroyed ------------------------------------------------------------

EXISTING = ["none", "file", "link to outside file", "dangling link", "fifo", "folder", "read-only file"]


def _prepare(folder: str, name: str, existing: str, outside: str) -> None:
    path = os.path.join(folder, name)
    if existing in ("file", "read-only file"):
        with open(path, "w") as fh:
            fh.write("of value\n")
        if existing == "read-only file":
            os.chmod(path, 0o444)
    elif existing == "link to outside file":
        os.symlink(outside, path)
    elif existing == "dangling link":
        os.symlink(os.path.join(folder, "gone"), path)
    elif existing == "fifo":
        os.mkfifo(path)
    elif existing == "folder":
        os.mkdir(path)


@examples(ci=80, shrink=False)
@given(existing=st.sampled_from(EXISTING), complete=st.booleans(), own=st.booleans(),
       name=st.sampled_from(["report.json", "keep.txt", "graph.dot", "noext"]))
def test_outputs_never_destroy_what_is_there(existing, complete, own, name):
    """`own`: a name cgtool picks in --out (write_own); else a file the user named (save_result). A failed run
    never replaces a file; cgtool's own names never write through a link; a FIFO with no reader is an error
    after FIFO_WAIT_S, not a hang."""
    from cgtool.render.outputs import write_own

    folder = scratch("cgtool-fuzz-out-")
    outside = os.path.join(scratch("cgtool-fuzz-outside-"), "precious.txt")
    with open(outside, "w") as fh:
        fh.write("outside\n")
    _prepare(folder, name, existing, outside)
    path = os.path.join(folder, name)
    old_wait, files.FIFO_WAIT_S = files.FIFO_WAIT_S, 0.2
    err = io.StringIO()
    try:
        with alarm(HANG_S), contextlib.redirect_stderr(err):
            if own:
                written = write_own(folder, name, "new\n", complete)
            else:
                written = files.save_result(path, "new\n", complete)
    except CgtoolError as exc:
        assert exc.exit_code in (2, 3) and not LEAKS.search(exc.message), exc.message
        assert existing in ("fifo", "folder", "read-only file"), (existing, exc.message)
        written = None
    finally:
        files.FIFO_WAIT_S = old_wait
    with open(outside) as fh:
        outside_now = fh.read()
    if own or not complete:
        assert outside_now == "outside\n"  # never written through a link cgtool did not get from the user
    read_only = existing == "read-only file" and os.geteuid() != 0  # root may write a read-only file, as a shell's `>`
    if existing in ("file", "read-only file") and (not complete or read_only):
        with open(path) as fh:
            assert fh.read() == "of value\n"  # a file of value outlives a failed run
    if existing == "fifo" and not own:
        assert stat.S_ISFIFO(os.stat(path).st_mode)
    if written is not None:
        with open(written) as fh:
            assert fh.read() == "new\n"
        if own and existing == "link to outside file" and complete:
            assert not os.path.islink(path)  # the link itself was replaced
    assert not [f for f in os.listdir(folder) if f.endswith(".tmp")]  # no temporary file left


@examples(ci=10, shrink=False)
@given(suffix=st.sampled_from([".dot", ".svg", ".txt"]))
def test_an_output_fifo_with_no_reader_is_an_error_not_a_hang(suffix):
    """dot -o onto a FIFO nobody reads: exit 3 after FIFO_WAIT_S with one line (lint -o: tests/test_files_io.py)."""
    fifo = os.path.join(_TMP, f"out-fifo{suffix}")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    old_wait, files.FIFO_WAIT_S = files.FIFO_WAIT_S, 0.2
    try:
        code, err = run(["dot", GOOD_DOT, "-o", fifo])
    finally:
        files.FIFO_WAIT_S = old_wait
    last = one_clean_line(err)
    if suffix == ".txt":
        assert code == 2 and "must end in" in last, err
    elif suffix == ".dot" or "not found" not in err:  # .svg needs Graphviz: without it, exit 3 saying so
        assert code == 3 and ("no process is reading this FIFO" in last or "Graphviz" in last), err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
