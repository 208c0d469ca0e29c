"""What the fuzz tests share: the property (a CgtoolError with a documented exit code and a one-line message
that leaks no Python internals, or a result, within a time bound), mutation strategies, and budgets."""

from __future__ import annotations

import copy
import io
import json
import os
import re
import time
from typing import Any, Callable

from hypothesis import Phase, settings
from hypothesis import strategies as st

from cgtool.errors import CgtoolError, ExitCode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
SHARED_DOTS = "/work/shared/fixtures/driver-dot"  # present on the project machines, not in CI: used when there

# What an input error may exit with: 2 (usage, unreadable input) or 3 (environment: e.g. a file unreadable).
INPUT_EXIT_CODES = {ExitCode.USAGE, ExitCode.ENVIRONMENT}
# Python internals that must never reach a user's message.
LEAKS = re.compile(r"Traceback|object at 0x|<class '|__init__\(\)|positional argument|\b(?:Key|Type|Attribute|Index|"
                   r"Value|ZeroDivision|Recursion)Error\(|NoneType|codec can't")

CI_EXAMPLES = 150  # the "ci" profile's max_examples (tests/conftest.py)
SECONDS = 10.0  # per example, on a loaded 2-core CI machine; inputs run in milliseconds


def scratch(prefix: str) -> str:
    """A temporary folder for one fuzz module, removed when the test run ends (no folder outlives a run)."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, True)
    return folder


def examples(ci: int, shrink: bool = True) -> settings:
    """`ci` examples under the "ci" profile; the loaded profile's multiple of it otherwise ("long": 33x).
    Without `shrink` a failure is reported as found (shrinking an end-to-end run would take many minutes)."""
    scale = settings().max_examples / CI_EXAMPLES
    phases = {} if shrink else {"phases": [Phase.explicit, Phase.generate]}
    return settings(max_examples=max(1, round(ci * scale)), **phases)


def check_error(exc: CgtoolError, one_line: bool = True) -> None:
    assert exc.exit_code in INPUT_EXIT_CODES, (exc.exit_code, exc.message)
    message = exc.message.strip()
    assert message, "an empty error message"
    if one_line:
        assert "\n" not in message, message
    # a syntax error quotes the user's own line below the message (`super().__init__()` is theirs, not a leak)
    assert not LEAKS.search(message.splitlines()[0]), message


def outcome(fn: Callable[..., Any], *args: Any, seconds: float = SECONDS, one_line: bool = True) -> Any:
    """fn(*args), or None when it raised a clean CgtoolError; anything else fails the test. Either way within
    `seconds`."""
    start = time.perf_counter()
    try:
        result = fn(*args)
    except CgtoolError as exc:
        check_error(exc, one_line)
        result = None
    elapsed = time.perf_counter() - start
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    _tally(fn, "accepted" if result is not None else "clean error", elapsed)
    return result


# CGTOOL_FUZZ_TALLY=FILE: append one JSON line per input (reader, result, seconds), to count what a run tried.
_TALLY = os.environ.get("CGTOOL_FUZZ_TALLY")


def _tally(fn: Callable[..., Any], result: str, elapsed: float) -> None:
    if _TALLY:
        with open(_TALLY, "a") as fh:
            fh.write(json.dumps({"reader": getattr(fn, "__name__", str(fn)), "result": result,
                                 "seconds": round(elapsed, 4)}) + "\n")


def fixture_bytes(*names: str) -> list[bytes]:
    out = []
    for name in names:
        with open(os.path.join(DATA, name), "rb") as fh:
            out.append(fh.read())
    return out


# Bytes that mean something to the readers: DOT syntax, record labels, launch dims, cgtool's attributes, JSON.
TOKENS = [b"{", b"}", b"[", b"]", b'"', b"'", b"->", b"--", b";", b",", b"=", b"<", b">", b"\\", b"\\\n", b"\n",
          b"/*", b"*/", b"//", b"#", b"|", b"subgraph ", b"cluster_", b"digraph ", b"graph ", b"strict ", b"node ",
          b"edge ", b"label=", b"shape=record", b"<<<", b">>>", b"<<<{1,2},{3},0>>>", b"KERNEL", b"MEMCPY", b"graph_1",
          b"cg_kind=", b'cg_kind="weird"', b'cg_fold_ids="0-99999999999"', b'cg_period="0"', b'cg_from="99"',
          b'cg_attrs="[1]"', b'cg_format="cgtool-dot/1"', b'cg_truncated="3"', b"1e308", b"-1", b"9" * 5000,
          b"NaN", b"Infinity", b"null", b"true", b"[]", b"{}", b'"nodes"', b'"edges"', b'"graph"', b'"schema"',
          b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", "é".encode(), "\u2028".encode(), "\U0001f600".encode()]


@st.composite
def mutated(draw: st.DrawFn, data: bytes, tokens: list[bytes] = TOKENS) -> bytes:
    """`data` after 1-8 random edits: deleted, inserted, repeated or flipped bytes, tokens, a cut."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["delete", "insert", "token", "repeat", "flip", "cut"]))
        n = len(buf)
        i = draw(st.integers(0, n))
        if op == "delete":
            del buf[i:draw(st.integers(i, min(n, i + 64)))]
        elif op == "insert":
            buf[i:i] = draw(st.binary(max_size=16))
        elif op == "token":
            buf[i:i] = draw(st.sampled_from(tokens)) * draw(st.integers(1, 3))
        elif op == "repeat":
            buf[i:i] = buf[i:draw(st.integers(i, min(n, i + 512)))] * draw(st.integers(1, 4))
        elif op == "flip" and n:
            buf[min(i, n - 1)] = draw(st.integers(0, 255))
        elif op == "cut":
            del buf[i:]
    return bytes(buf)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def _slots(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in a JSON document, depth first."""
    out: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            out.append((node, key))
            stack.append(value)
    return out


@st.composite
def mutated_json(draw: st.DrawFn, doc: Any) -> Any:
    """A deep copy of `doc` with 1-4 values replaced by random JSON, removed, or wrapped in a list."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 4))):
        slots = _slots(doc)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        op = draw(st.sampled_from(["replace", "replace", "delete", "wrap", "stringify"]))
        if op == "replace":
            container[key] = draw(json_values)
        elif op == "delete":
            del container[key]
        elif op == "wrap":
            container[key] = [container[key]]
        else:
            container[key] = json.dumps(container[key])
    return doc


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode()


def text_console() -> Any:
    from rich.console import Console

    return Console(file=io.StringIO(), width=100, no_color=True)
