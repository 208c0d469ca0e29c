"""What the checks share: making a Finding at a traced frame, and lining up iterations to compare."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.rules import finding
from cgtool.model.trace import Iteration, OpRecord, Trace


def finding_at(trace: Trace, rule: str, frame: int, message: str, hint: str | None = None,
               severity: str | None = None, kind: str | None = None) -> Finding:
    """A finding for `rule` (of `kind`: model/rules.py, Kind) at trace frame `frame` (no location when -1)."""
    return finding_for(rule, trace.frame(frame), message, hint, severity, kind)


def finding_at_op(trace: Trace, rule: str, op: OpRecord, message: str, hint: str | None = None,
                  severity: str | None = None, kind: str | None = None) -> Finding:
    """A finding for `rule` at the op's user line, naming the library frame that issued the op, if any."""
    f = finding_at(trace, rule, op.frame, message, hint, severity, kind)
    lib = trace.frame(op.lib)
    return replace(f, library=library_place(lib)) if lib is not None else f


def finding_for(rule: str, f: Frame | None, message: str, hint: str | None = None,
                severity: str | None = None, kind: str | None = None) -> Finding:
    if f is None:
        return finding(rule, message, hint=hint, severity=severity, kind=kind)
    return finding(rule, message, file=f.file, line=f.line, source=f.source, function=f.function, hint=hint,
                   severity=severity, kind=kind)


def quote(trace: Trace, frame: int) -> str:
    """"line 12 (`y = y * 2`)" for messages."""
    f = trace.frame(frame)
    if f is None:
        return "an unknown line"
    source = f.source.split("  #", 1)[0].strip()
    return f"line {f.line} (`{source}`)" if source else f"line {f.line}"


def capture_iterations(trace: Trace) -> list[Iteration]:
    """The iterations whose ops are what a capture records: the capture iteration (on the GPU the real
    capture, on the CPU the emulated one). A trace without one (older traces, hand-made ones) offers all.

    Checks of what happens during capture (syncs, streams, generators, host copies) read these, not
    warmup: capture-aware libraries take another path while a stream captures, and first iterations do
    one-time work that capture never sees."""
    captured = [it for it in trace.iterations if it.phase == "capture"]
    return captured or list(trace.iterations)


def op_place(trace: Trace, op: OpRecord) -> str:
    """"`aten.mm` at line 12 (`y = model(x)`)", plus the library frame that issued it when it is not the
    user's own line: "…, in transformers/masking_utils.py:755 in find_packed_sequence_indices"."""
    text = f"`{op.name}` at {quote(trace, op.frame)}"
    lib = trace.frame(op.lib)
    if lib is not None:
        text += f", in {library_place(lib)}"
    return text


def library_place(f: Frame) -> str:
    from cgtool.trace.frame_table import short_path

    return f"{short_path(f.file.replace(chr(92), '/'))}:{f.line} in {f.function}"


def compared_iterations(trace: Trace) -> list[Iteration]:
    """The steady state: the later half of the warmup iterations that completed, never the first when two
    or more remain without it (with the default 3 warmups: iterations 1 and 2; with 11: iterations 5 to 10).
    The first iterations do one-time work (lazy init, optimizer state, caches, DDP rebuilding its buckets
    after iteration 1). Shapes and op sequences are compared among these; the capture iteration is not,
    because capture-aware code legitimately runs other ops while a stream captures. A trace with no warmup
    iteration compares what it has."""
    warm = [it for it in trace.iterations if it.phase != "capture"] or list(trace.iterations)
    done = [it for it in warm if it.error is None and it.ops]
    if len(done) < 3:
        return done
    return done[max(1, len(done) // 2):]


@dataclass(frozen=True)
class Alignment:
    """Two iterations' ops lined up: pairs of equal (kind, name, frame) keys, and the first divergence."""

    pairs: list[tuple[OpRecord, OpRecord]]
    diverge_at: int | None  # index of the first op that differs, None when the sequences are equal
    a: Iteration
    b: Iteration


def _key(op: OpRecord) -> tuple[str, str, int]:
    return (op.kind, op.name, op.frame)


def user_ops(it: Iteration) -> list[OpRecord]:
    """The ops the user's code issued: without the harness's own (torch.cuda.graph's set-up), which have
    no user frame."""
    ops = it.ops
    return ops if all(o.frame >= 0 for o in ops) else [o for o in ops if o.frame >= 0]


def align(a: Iteration, b: Iteration) -> Alignment:
    """Pairs from the common prefix and the common suffix, and between them, after the first divergence, from each
    place where the two iterations run the same ops again (_resynced: no quadratic diff on 10k-op sequences), so
    that one branch does not hide the hazards after it. diverge_at indexes user_ops(a) and user_ops(b)."""
    oa, ob = user_ops(a), user_ops(b)
    ka, kb = [_key(o) for o in oa], [_key(o) for o in ob]
    if ka == kb:
        return Alignment(list(zip(oa, ob)), None, a, b)
    n = min(len(ka), len(kb))
    k = 0
    while k < n and ka[k] == kb[k]:
        k += 1
    pairs = list(zip(oa[:k], ob[:k]))
    s = 0
    while s < n - k and ka[-1 - s] == kb[-1 - s]:
        s += 1
    pairs += [(oa[i], ob[j]) for i, j in _resynced(ka, kb, k, len(ka) - s, len(kb) - s)]
    if s:
        pairs += list(zip(oa[len(ka) - s:], ob[len(kb) - s:]))
    return Alignment(pairs, k, a, b)


# Ops in a row that must match again before the ops after a divergence are paired
RESYNC_WINDOW = 6


def _resynced(ka: list, kb: list, lo: int, a_end: int, b_end: int) -> list[tuple[int, int]]:
    """Index pairs of equal keys in ka[lo:a_end] and kb[lo:b_end], both starting at a divergence: from each
    divergence the nearest place (fewest ops skipped on both sides) where RESYNC_WINDOW keys in a row match again,
    then keys in step until the next divergence. Linear in the ops (a window index of kb), never a full diff."""
    from bisect import bisect_left

    w = RESYNC_WINDOW
    where: dict[tuple, list[int]] = {}
    for j in range(lo, b_end - w + 1):
        where.setdefault(tuple(kb[j:j + w]), []).append(j)
    out: list[tuple[int, int]] = []
    i = j = lo
    while i < a_end and j < b_end:
        if ka[i] == kb[j]:
            out.append((i, j))
            i, j = i + 1, j + 1
            continue
        best, cost = None, a_end + b_end  # the nearest place found so far, and the ops it skips on both sides
        x = i
        while x + w <= a_end and x - i < cost:
            js = where.get(tuple(ka[x:x + w]))
            at = bisect_left(js, j) if js else 0
            if js and at < len(js) and x - i + js[at] - j < cost:
                best, cost = (x, js[at]), x - i + js[at] - j
            x += 1
        if best is None:
            break
        i, j = best
    return out


def alignments(trace: Trace) -> Iterator[Alignment]:
    """The first compared iteration against each later one."""
    its = compared_iterations(trace)
    for other in its[1:]:
        yield align(its[0], other)


