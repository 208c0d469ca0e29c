"""Fuzz the classes of issue 34 (reliability round 3) that live where cgtool meets the user's world: working folders
that shadow cgtool's packages, the script's BaseExceptions, entry names, the signal that stops lint, control
characters in what the console shows, graphs with cycles, and numbers written as text. Each property is checked
against an oracle of its own (Python's graphlib, str.isascii, the script's own line numbers), cheaply: a few seconds
each under the `ci` profile."""

from __future__ import annotations

import graphlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile

from fuzzing import LEAKS, ROOT, examples, outcome, scratch
from hypothesis import given
from hypothesis import strategies as st

from cgtool.errors import CTRL_C, CgtoolError, ExitCode
from cgtool.graph.graph_file import read_graph_file
from cgtool.graph.model import Graph, GraphNode
from cgtool.model.limits import LIMITS, check_number, parse_number

_TMP = scratch("cgtool-fuzz-boundaries-")

# --- working folders that shadow what cgtool imports -------------------------------------------------------------

SHADOWED = ["cgtool", "torch", "click", "rich", "numpy", "typing_extensions", "json", "runpy", "importlib", "site",
            "sitecustomize", "encodings_x", "helper"]


def _shadow(folder: str, names: list[str], as_package: list[bool]) -> None:
    for name, package in zip(names, as_package):
        body = f"raise ImportError('the working folder {name} was imported')\n"
        if package:
            os.makedirs(os.path.join(folder, name), exist_ok=True)
            with open(os.path.join(folder, name, "__init__.py"), "w") as fh:
                fh.write(body)
        else:
            with open(os.path.join(folder, f"{name}.py"), "w") as fh:
                fh.write(body)


@examples(4, shrink=False)
@given(st.data())
def test_the_boot_of_every_cgtool_process_ignores_the_working_folder(data):
    """`python -c BOOT PKG cgtool --version` (worker/start.py) from a folder shadowing cgtool, click, rich and more."""
    from cgtool.worker.start import python_command

    names = data.draw(st.lists(st.sampled_from(SHADOWED), min_size=1, max_size=6, unique=True))
    folder = tempfile.mkdtemp(dir=_TMP)
    _shadow(folder, names, data.draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names))))
    r = subprocess.run(python_command("cgtool", "--version"), cwd=folder, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "cgtool" in r.stdout, (names, r.stderr)


@examples(1, shrink=False)
@given(st.data())
def test_lint_from_a_shadowing_folder(data):
    """The real worker (torch imported, the script loaded and run) from a folder shadowing torch and cgtool."""
    names = ["cgtool", "torch", *data.draw(st.lists(st.sampled_from(SHADOWED[2:]), max_size=3, unique=True))]
    folder = tempfile.mkdtemp(dir=_TMP)
    _shadow(folder, names, data.draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names))))
    script = os.path.join(ROOT, "samples", "mlp_inference.py")
    boot = "import sys; del sys.path[0]; from cgtool.cli import main; main()"  # the console script's path
    r = subprocess.run([sys.executable, "-c", boot, "lint", script, "--format", "json"], cwd=folder,
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))))
    assert r.returncode == 0, (names, r.stdout, r.stderr)
    assert json.loads(r.stdout)["summary"]["failed_scripts"] == 0


# --- the script's BaseExceptions ---------------------------------------------------------------------------------

KINDS = ["Stop", "Halt", "GeneratorExit", "SystemExit", "KeyboardInterrupt"]
WHERE = {"import": "load", "setup": "setup", "inputs": "inputs", "step": "warmup"}


@examples(8)
@given(kind=st.sampled_from(KINDS), where=st.sampled_from(list(WHERE)), arg=st.sampled_from(["", "'msg'", "3", "None"]),
       depth=st.integers(0, 3))
def test_a_base_exception_is_the_scripts_error(kind, where, arg, depth):
    """Raised `depth` calls down from setup/inputs/step (or at import): the script's error, at its line, in the
    phase it was raised in, whatever its kind; nothing escapes the capture job."""
    from cgtool.model.job import CaptureSettings, Job
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline.capture_job import capture_job

    lines = ["import torch", "class Stop(BaseException):", "    pass", "class Halt(Stop):", "    pass",
             "def deep(n):", "    if n:", "        return deep(n - 1)", f"    raise {kind}({arg})"]
    at = len(lines)
    call = f"deep({depth})"
    lines += ["def setup(device):", f"    {call}" if where == "setup" else "    pass", "    return {'w': torch.ones(2)}",
              "def inputs(i, device):", f"    {call}" if where == "inputs" else "    pass", "    return {'x': torch.ones(2)}",
              "def step(w, x):", f"    {call}" if where == "step" else "    pass", "    return w * x"]
    if where == "import":
        lines.append(call)
    path = os.path.join(tempfile.mkdtemp(dir=_TMP), "s.py")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    report = capture_job(Job("capture", path, "step", CaptureSettings(warmup=2), True), PhaseLog())
    assert report.status == "script-error"
    [error] = report.errors
    assert (error.phase, error.type) == (WHERE[where], kind)
    frames = [(f.file, f.line) for f in error.frames]
    assert frames[-1] == (path, at) and all(file == path for file, _ in frames)
    assert not LEAKS.search(error.message), error.message


MISSING = os.path.join(_TMP, "missing", "s.py")  # every command stops on it once its options are read


def _run(args: list[str]) -> tuple[int, str]:
    import contextlib

    from cgtool.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


# --- entry names -------------------------------------------------------------------------------------------------

entries = st.one_of(st.text(max_size=12), st.from_regex(r"\A__[a-z]{1,8}__\Z"), st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,8}\Z"),
                    st.sampled_from(["", "__init__", "__class__", "def", "step", "None", "a-b", "ﬁx", "λ"]))


@examples(60)
@given(command=st.sampled_from(["capture", "lint", "bench"]), entry=entries)
def test_every_command_checks_the_entry_name_once(command, entry):
    """A name no function can have is exit 2 with one line saying so, before anything runs; any other name reaches
    the (missing) script. The same verdict for every command."""
    from cgtool.script.contract import entry_name

    valid = outcome(entry_name, entry)
    if valid is not None:
        assert valid.isidentifier() and not (valid.startswith("__") and valid.endswith("__"))
    code, err = _run([command, MISSING, "--entry", entry])
    assert code == ExitCode.USAGE and not LEAKS.search(err), err
    named = "not a valid entry name" in err or "no such function" in err
    assert named == (valid is None), err


# --- the signal that stops lint ----------------------------------------------------------------------------------


@examples(20)
@given(stop=st.sampled_from([CTRL_C, "SIGTERM", "SIGHUP"]), fmt=st.sampled_from(["text", "json", "sarif", "github", "junit"]),
       unchecked=st.lists(st.sampled_from(["a.py", "b.py", "c d.py"]), min_size=1, max_size=3, unique=True))
def test_an_interrupted_lint_names_its_stop(stop, fmt, unchecked):
    from cgtool.model.lint_result import LintResult
    from cgtool.render.lint_formats import render_lint

    result = LintResult([], interrupted=True, stop=stop, unchecked=unchecked)
    out = render_lint(result, fmt)
    assert (f'"interrupted_by": "{stop}"' if fmt == "json" else f"interrupted ({stop})") in out
    assert all(f"({other})" not in out for other in {CTRL_C, "SIGTERM", "SIGHUP"} - {stop})
    import signal

    assert result.exit_code == (130 if stop == CTRL_C else 128 + signal.Signals[stop])


# --- control characters in what the console shows ----------------------------------------------------------------

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from(["\x07", "\x1b", "\r", "\x9b", "\x7f"]),
                min_size=1, max_size=20)


@examples(60)
@given(kernels=st.lists(names, min_size=1, max_size=4), message=names)
def test_control_characters_are_escaped_never_dropped(kernels, message):
    """Kernel names in the summary tables and a message: no control character reaches the output but newline and
    tab, and each one in the input is there as its escape (as many as the input holds)."""
    from cgtool.graph.summary import summarize
    from cgtool.render.console import SafeConsole
    from cgtool.render.graph_summary import render_summary

    graph = Graph(tuple(GraphNode(i, "kernel", name=k) for i, k in enumerate(kernels)), ())
    console = SafeConsole(file=io.StringIO(), width=10_000, no_color=True, soft_wrap=True)
    render_summary(summarize(graph), "g.dot", console)
    console.print(message, markup=False)
    out = console.file.getvalue()
    assert not CONTROL.search(out)
    for char in set(CONTROL.findall("".join(kernels) + message)) - {"\r"}:
        escape = f"\\x{ord(char):02x}"
        assert out.count(escape) >= message.count(char), (char, out)


# --- graphs with cycles ------------------------------------------------------------------------------------------


@examples(80)
@given(st.data())
def test_a_graph_file_is_read_iff_it_has_no_cycle(data):
    """Random edges (self-loops too) and child graphs: read iff graphlib finds no cycle; else exit 2 naming a
    cycle whose every step is an edge of the file or a node's child graph."""
    n = data.draw(st.integers(1, 12))
    edges = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n, unique=True))
    graph_of = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    child = {i: c for i in range(n) if (c := data.draw(st.none() | st.integers(0, 2))) is not None}
    nodes = tuple(GraphNode(i, "graph" if i in child else "kernel", graph=graph_of[i], child=child.get(i)) for i in range(n))
    path = os.path.join(tempfile.mkdtemp(dir=_TMP), "g.json")
    with open(path, "w") as fh:
        json.dump(Graph(nodes, tuple(edges)).to_json(), fh)
    sorter = graphlib.TopologicalSorter({i: set() for i in range(n)})
    for a, b in edges:
        sorter.add(b, a)
    for i, c in child.items():  # a node comes before every node of the graph it embeds
        for j in range(n):
            if graph_of[j] == c:
                sorter.add(j, i)
    try:
        sorter.prepare()
        acyclic = True
    except graphlib.CycleError:
        acyclic = False
    got = outcome(read_graph_file, path)
    assert (got is not None) == acyclic
    if got is None:
        try:
            read_graph_file(path)
        except CgtoolError as exc:
            m = re.search(r"cycle through nodes ([\d >-]+?)( \(child graphs that embed each other\))?;", exc.message)
            assert m, exc.message
            cycle = [int(x) for x in m.group(1).split(" -> ")]
            assert cycle[0] == cycle[-1]
            for a, b in zip(cycle, cycle[1:]):
                assert (a, b) in edges or (a in child and graph_of[b] == child[a]), (cycle, edges, child)


# --- numbers written as text -------------------------------------------------------------------------------------

digits = st.characters(categories=["Nd"])
number_text = st.one_of(st.text(st.sampled_from("0123456789+-.e_ ") | digits, max_size=8),
                        st.integers(-5, 2000).map(str), st.floats(allow_nan=False, allow_infinity=False).map(str))


@examples(120)
@given(text=number_text, limit=st.sampled_from(sorted(LIMITS)))
def test_numbers_are_ascii_only(text, limit):
    """Accepted iff Python reads the text as a number AND it is plain ASCII without `_` (the oracle)."""
    whole = LIMITS[limit].whole
    try:
        python = int(text, 10) if whole else float(text)
    except ValueError:
        python = None
    plain = text.strip().isascii() and "_" not in text and python is not None
    got = parse_number(text, whole)
    assert (got is not None) == plain, (text, got)
    if got is not None:
        assert got == python
    try:
        check_number(text, limit, "--x", from_text=True)
    except CgtoolError as exc:
        assert exc.exit_code == ExitCode.USAGE and "\n" not in exc.message


@examples(80)
@given(parts=st.lists(st.one_of(st.integers(1, 64).map(str), st.just(""), st.just(" "), digits, st.just("1_0")),
                      min_size=0, max_size=5))
def test_sizes_have_no_empty_or_non_ascii_entry(parts):
    from cgtool.bench.size_plan import parse_sizes

    text = ",".join(parts)
    ok = bool(parts) and all(p.strip().isascii() and p.strip().isdigit() and int(p) >= 1 for p in parts)
    try:
        sizes = parse_sizes(text)
    except ValueError as exc:
        assert not ok and str(exc)
    else:
        assert ok and sizes == list(dict.fromkeys(int(p) for p in parts))
