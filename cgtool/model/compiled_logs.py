"""Read torch's CUDAGraph Trees log records, warnings and errors as CompiledEvents (no torch: tests feed records
recorded on an H100 with torch 2.11). Texts and loggers: docs/research/torch-compile-sources.md; they hold for 2.11
and 2.13 (2.13 prefixes some records with the compile id and moved the symint key to the last argument)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any

from cgtool.model.compiled import (
    DYNAMIC_SHAPES,
    GUARD_SIZE,
    GUARD_VALUE,
    OVERWRITTEN,
    PARTITION,
    PENDING_BACKWARD,
    RERECORD,
    SKIP,
    RECOMPILE,
    CompiledEvent,
    GraphBreak,
    TreeFunction,
)
from cgtool.model.frame import Frame

SKIP_PREFIXES = ("skipping cudagraphs due to ", "disabling cudagraphs due to ")
RERECORD_LIMIT = "exceeding max re-recording limit"
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_SIZES = re.compile(r"We have observed (\d+) distinct sizes")
_MAX_MESSAGE = 600


def is_cudagraph_logger(name: str) -> bool:
    """The loggers whose records say what the trees did (artifact loggers are `<module>.__cudagraphs`)."""
    return name.endswith("__cudagraphs")


def stack_frame(text: str) -> Frame | None:
    """The innermost `File "x.py", line N, in fn` of a stack text (FX stack traces are innermost last), with the
    source line that follows it (caret lines dropped)."""
    matches = list(_FILE_LINE.finditer(text))
    if not matches:
        return None
    m = matches[-1]
    rest = text[m.end():].split("\n")
    source = next((ln.strip() for ln in rest[1:3] if ln.strip() and not set(ln.strip()) <= set("^~ ")), "")
    return Frame(m.group(1), int(m.group(2)), m.group(3), source)


def skip_reason(message: str) -> str:
    """torch's reason without the (sometimes doubled) prefix and the stack: `cpu device (arg0_1)`,
    `mutated inputs (1 instances)`, `incompatible op aten._local_scalar_dense.default`."""
    text = message.split("Found from")[0]
    changed = True
    while changed:
        changed = False
        for prefix in SKIP_PREFIXES:
            if text.startswith(prefix):
                text, changed = text[len(prefix):], True
    return text.strip().rstrip(".").strip()


def rerecord_reason(message: str) -> tuple[str, Frame | None]:
    """`[0/0] Re-recording function=partition_0, reason=static input data pointer changed.\\ninput name: ...`
    → ("static input data pointer changed (arg0_1)", the input's stack frame when torch knew it)."""
    reason = message.split("reason=", 1)[-1]
    first, _, rest = reason.partition("\n")
    m = re.search(r"input name: (\S+?)\.", rest)
    frame = stack_frame(rest.split("input stack trace:", 1)[-1]) if "input stack trace:" in rest else None
    return first.strip().rstrip(".") + (f" ({m.group(1)})" if m else ""), frame


def _short(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE - 3] + "..."


def events_from_records(records: list[dict[str, Any]]) -> list[CompiledEvent]:
    """Skips, re-records and the dynamic-shape warning from log records ({logger, level, msg, args, message}).
    Identical events are merged with a count (a re-record per mismatching candidate node repeats)."""
    raw: list[CompiledEvent] = []
    for r in records:
        if not is_cudagraph_logger(str(r.get("logger", ""))):
            continue
        message = str(r.get("message", ""))
        if message.startswith(SKIP_PREFIXES) or "skipping cudagraph due to" in message:
            reason = skip_reason(message) if RERECORD_LIMIT not in message else \
                "re-recording limit: " + message.split(" due to ")[-1].strip().rstrip(".")
            raw.append(CompiledEvent(SKIP, reason, _short(message), stack_frame(message)))
        elif "Re-recording function=" in message:
            reason, frame = rerecord_reason(message)
            raw.append(CompiledEvent(RERECORD, reason, _short(message.split("\n")[0]), frame or call_of(r)))
        elif "distinct input size" in message:
            m = _SIZES.search(message)
            reason = f"{m.group(1) if m else 'many'} distinct input sizes: a new graph for each"
            raw.append(CompiledEvent(DYNAMIC_SHAPES, reason, _short(message), call_of(r)))
    return merge(raw + partition_events(records))


def call_of(record: dict[str, Any]) -> Frame | None:
    """The user's call into compiled code that was running when torch wrote the record (the watch adds it)."""
    c = record.get("call")
    return Frame.from_json(c) if isinstance(c, dict) else None


_BREAK_AT = re.compile(r"Graph break(?: \(user stack suppressed[^)]*\))? in user code at (.+):(\d+)\s*$", re.M)
_RECOMPILE = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
_GENERIC = "Encountered graph break when attempting"


def _matching(records: list[dict[str, Any]], logger_suffix: str,
              pattern: re.Pattern[str]) -> list[tuple[dict[str, Any], str, re.Match[str]]]:
    """(record, message, match) for each record of a logger ending in `logger_suffix` whose text matches."""
    out = []
    for r in records:
        if str(r.get("logger", "")).endswith(logger_suffix):
            message = str(r.get("message", ""))
            m = pattern.search(message)
            if m is not None:
                out.append((r, message, m))
    return out


def breaks_from_records(records: list[dict[str, Any]]) -> list[GraphBreak]:
    """Graph breaks from dynamo's `graph_breaks` records (`Graph break in user code at F:N` / `Graph Break Reason:
    ...` / `User code traceback:`), merged by line and reason with a count."""
    import linecache

    found: dict[tuple[str, int, str], GraphBreak] = {}
    for _r, message, m in _matching(records, "__graph_breaks", _BREAK_AT):
        file, line = m.group(1).strip(), int(m.group(2))
        reason, detail = break_reason(message)
        trace = message.split("User code traceback:", 1)
        frame = stack_frame(trace[1]) if len(trace) > 1 else None
        if frame is None or frame.file != file or frame.line != line:
            frame = Frame(file, line, "", linecache.getline(file, line).strip())
        key = (file, line, reason)
        old = found.get(key)
        found[key] = GraphBreak(old.frame if old else frame, reason, detail, (old.count + 1) if old else 1,
                                break_kind(reason, detail, frame.source))
    return list(found.values())


def break_reason(message: str) -> tuple[str, str]:
    """(title, explanation) of a graph-break record: `Data-dependent branching`, `Unsupported Tensor.item() call
    with capture_scalar_outputs=False`; older torch writes one line after `Graph Break Reason:`."""
    text = message.split("Graph Break Reason:", 1)[-1]
    text = text.split("User code traceback:", 1)[0]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].startswith(_GENERIC):
        lines = lines[1:]
    title = lines[0] if lines else "graph break"
    detail = next((ln[len("Explanation:"):].strip() for ln in lines if ln.startswith("Explanation:")), "")
    return _short(title)[:200], _short(detail)[:300]


def break_kind(reason: str, detail: str, source: str) -> str:
    """What the user did, in one word: item (a GPU value read on the host), branch, print, call, other."""
    text = f"{reason} {detail}".lower()
    if ".item()" in text or "tolist" in text or "_local_scalar_dense" in text or "scalar" in text:
        return "item"
    if "data-dependent branching" in text or "jump" in text or "dynamic control flow" in text:
        return "branch"
    if "`print`" in text or "print(" in source:
        return "print"
    if "call" in text or "function" in text:
        return "call"
    return "other"


def recompile_events(records: list[dict[str, Any]]) -> list[CompiledEvent]:
    """dynamo's `recompiles` records (`Recompiling function f in F:N / triggered by ... size mismatch ...`), at
    the user's call that passed the new input."""
    out = []
    for r, message, m in _matching(records, "__recompiles", _RECOMPILE):
        # guard lines end in torch's source comment (`   # x = f(y)  # file.py:12 in fn`): the guard alone
        why = [re.split(r"\s+#\s", ln.strip().lstrip("- ").strip())[0] for ln in message.splitlines()[2:] if ln.strip()]
        reason = f"{m.group(1)} recompiled: {why[0] if why else 'a guard failed'}"
        reason = re.sub(r"^\d+/\d+: ", "", reason.split(": ", 1)[0]) + ": " + re.sub(r"^\d+/\d+: ", "",
                                                                                      reason.split(": ", 1)[1])
        reason = reason[:300]
        out.append(CompiledEvent(RECOMPILE, reason, _short(message), call_of(r),
                                 function=reason.split(" recompiled", 1)[0], guard=reason.split(": ", 1)[-1],
                                 guard_on=guard_on(reason)))
    return merge(out)


def guard_on(guard: str) -> str:
    """What a failed guard checks, from torch's words: GUARD_SIZE for a shape ("size mismatch"), GUARD_VALUE for a
    Python int (`... == 8`); once dynamo makes it a symbol, CUDAGraph Trees record one graph per distinct value
    (they key their graphs on the int inputs). "" for other guards."""
    if "size mismatch" in guard:
        return GUARD_SIZE
    return GUARD_VALUE if re.search(r"== -?\d+\s*$", guard) is not None else ""


def partition_events(records: list[dict[str, Any]]) -> list[CompiledEvent]:
    """graph_partition's DEBUG records (scheduler): `    op1: reason=cpu ops, ir=...` per op left out of the
    graphs, followed by `File "...", line N, in fn` and the source line when the op has a stack trace."""
    out: list[CompiledEvent] = []
    rows = [r for r in records if str(r.get("logger", "")).startswith("torch._inductor.scheduler")]
    for n, r in enumerate(rows):
        args = r.get("args") or []
        if r.get("msg") != "    %s: %s" or len(args) < 2 or not str(args[1]).startswith("reason="):
            continue
        reason = str(args[1])[len("reason="):].split(", ir=")[0]
        frame = None
        for nxt in rows[n + 1:n + 3]:
            if nxt.get("msg") != "         %s":
                break
            text = str((nxt.get("args") or [""])[0])
            if frame is None:
                frame = stack_frame(text)
            elif frame.source == "":
                frame = Frame(frame.file, frame.line, frame.function, text.strip())
        out.append(CompiledEvent(PARTITION, f"graph split at {reason}", _short(r.get("message", "")), frame))
    return out


def merge(events: list[CompiledEvent]) -> list[CompiledEvent]:
    counts = Counter((e.kind, e.reason, e.frame) for e in events)
    first: dict[tuple[str, str, Frame | None], CompiledEvent] = {}
    for e in events:
        first.setdefault((e.kind, e.reason, e.frame), e)
    return [replace(e, count=counts[k]) for k, e in first.items()]


def events_from_warnings(messages: list[str]) -> list[CompiledEvent]:
    """The pending-backward fallback (a UserWarning, once per function; 2.11 and 2.13 texts differ)."""
    out = []
    for text in messages:
        if "Unable to hit fast path of CUDAGraphs" in text:
            out.append(CompiledEvent(PENDING_BACKWARD, "outputs of a previous call still wait for backward()",
                                     _short(text)))
    return merge(out)


def events_from_errors(errors: list[tuple[str, Frame | None]]) -> list[CompiledEvent]:
    """The overwritten-output error, raised where the user reads the output; (message, the user's frame)."""
    out = []
    for text, frame in errors:
        if "output of CUDAGraphs that has been overwritten" in text:
            stack = text.split("Stack trace:", 1)[-1]
            made = stack_frame(stack.split(". To prevent", 1)[0])
            out.append(CompiledEvent(OVERWRITTEN, "an output was read after a later call overwrote it",
                                     _short(text), frame or made))
    return merge(out)


def functions_from_tree(tree: dict[str, Any] | None, symint_keys: list[dict[str, Any]] | None) -> list[TreeFunction]:
    """Tree functions from the observer's tree state (capture/trees.py `tree_state`: functions with their graph
    ids, num_rerecord by graph → function) and the symint keys of each cudagraphify closure."""
    if not tree or not tree.get("functions"):
        return []
    keys: dict[int, str] = {}
    for entry in symint_keys or []:
        for k in entry.get("keys", []):
            if k.get("function_id") is not None and k.get("key") is not None:
                keys[int(k["function_id"])] = str(k["key"])
    rerecords: Counter[int] = Counter()
    for per_fn in (tree.get("num_rerecord") or {}).values():
        for fid, n in per_fn.items():
            rerecords[int(fid)] += int(n)
    return [TreeFunction(int(f["function_id"]), str(f.get("name", "")), str(f.get("mode", "")),
                         str(f.get("compile_id", "")), len(f.get("graph_ids", [])), keys.get(int(f["function_id"])),
                         rerecords[int(f["function_id"])])
            for f in tree["functions"]]
