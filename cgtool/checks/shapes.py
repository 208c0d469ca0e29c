"""Iterations that differ: tensor shapes (CG301, dynamic-shape) and op sequences (CG302, control-flow).

Replay repeats the captured iteration exactly, so any difference between warmup iterations is one that
replay will silently drop. For a differing op sequence the finding names the branch statement (found in
the source) that sends the iterations different ways, and both diverging lines.
"""

from __future__ import annotations

import ast
import functools
from typing import Iterable

from cgtool.checks.common import Alignment, alignments, finding_at, finding_for, op_place, user_ops
from cgtool.checks.changing_numbers import SCHEDULER_HINT, optim_source
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.trace import OpRecord, Trace
from cgtool.script.frames import make_frame
from cgtool.trace import op_roles as R

_BRANCHES = (ast.If, ast.IfExp, ast.While, ast.For, ast.AsyncFor, ast.Try, ast.Match, ast.BoolOp,
             ast.comprehension)
_SYNC_NAMES = frozenset(R.SCALAR_READ_CALLS) | R.SCALAR_READ_ATEN


def check_shapes(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    causes: list[tuple[int, int]] = []  # (size before, size after) pairs already reported
    data_dependent = {op.frame for it in trace.iterations for op in it.ops
                      if op.detail is not None and _sizes_from_data(op)}
    for al in alignments(trace):
        for a, b in al.pairs:
            if data_dependent and a.frame in data_dependent:  # sizes that follow from the data: causes
                causes += _changed_sizes(_out_shapes(a), _out_shapes(b))
            if a.shapes == b.shapes or a.host:
                continue
            pairs = list(_changed_sizes(a.shapes, b.shapes))
            if pairs and all(_explained(p, causes) for p in pairs):
                continue
            causes += pairs
            if a.frame in data_dependent:
                continue  # sizes that follow from data (nonzero, masks): the sync finding names the line
            out.append(finding_at(trace, "CG301", b.frame, _shape_message(a, b, al, trace)))
    return out


def _out_shapes(op: OpRecord) -> tuple:
    return tuple((op.detail or {}).get("out_shapes", ()))


def _sizes_from_data(op: OpRecord) -> bool:
    d = op.detail or {}
    return (op.name in R.DATA_DEPENDENT_ATEN and not d.get("fixed_size")) or bool(d.get("bool_index") or d.get("data_dependent"))


def _changed_sizes(sa: tuple, sb: tuple) -> Iterable[tuple[int, int]]:
    for x, y in zip(sa, sb):
        if len(x) != len(y):
            yield (len(x), -len(y) - 1)  # a rank change: never explained by a size change
            continue
        for p, q in zip(x, y):
            if p != q:
                yield (p, q)


def _explained(pair: tuple[int, int], causes: list[tuple[int, int]]) -> bool:
    """A size change that follows from one already reported: same change, same ratio or same offset."""
    p, q = pair
    return any((p, q) == (c, d) or (p * d == q * c and c) or (p - q == c - d) for c, d in causes)


def _shape_message(a: OpRecord, b: OpRecord, al: Alignment, trace: Trace) -> str:
    """Say exactly what differs: which argument of which op, which dimension, the two sizes; and which of
    the step's inputs changed with it."""
    i, j = al.a.index, al.b.index
    where = op_place(trace, b)
    if len(a.shapes) != len(b.shapes):
        what = f"{where} gets {len(a.shapes)} tensors in iteration {i} and {len(b.shapes)} in iteration {j}"
    else:
        k, (x, y) = next((k, p) for k, p in enumerate(zip(a.shapes, b.shapes)) if p[0] != p[1])
        if len(x) != len(y):
            what = (f"tensor {k} of {where} has {len(x)} dimensions in iteration {i} and {len(y)} in iteration {j} "
                    f"({tuple(x)} then {tuple(y)})")
        else:
            dims = [(d, p, q) for d, (p, q) in enumerate(zip(x, y)) if p != q]
            sizes = "; ".join(f"dim {d} is {p} in iteration {i} and {q} in iteration {j}" for d, p, q in dims[:3])
            what = f"tensor {k} of {where}: {sizes} ({tuple(x)} then {tuple(y)})"
    msg = f"tensor shapes change between steady-state iterations: {what}; replay keeps the captured shapes"
    changed = [name for name in al.a.inputs if name in al.b.inputs and al.a.inputs[name] != al.b.inputs[name]]
    if changed:
        name = changed[0]
        sa, sb = al.a.inputs[name], al.b.inputs[name]
        moved = [f"dim {d}: {p} then {q}" for d, (p, q) in enumerate(zip(sa, sb)) if p != q] or [f"{sa} then {sb}"]
        msg += f" (the step's input `{name}` changes: {', '.join(moved)})"
    return msg


def check_control_flow(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    syncs = {_line(trace.frame(op.frame)) for it in trace.iterations for op in it.ops
             if op.name in _SYNC_NAMES and not op.host}
    for al in alignments(trace):
        k = al.diverge_at
        if k is None:
            continue
        oa, ob = user_ops(al.a), user_ops(al.b)
        a = oa[k] if k < len(oa) else None
        b = ob[k] if k < len(ob) else None
        where, branch = _branch_of(trace, a, b)
        if _line(branch) in syncs or _line(where) in syncs:
            continue  # a branch on a tensor value: the sync finding at that line says it
        ra = op_place(trace, a) if a else "nothing more"
        rb = op_place(trace, b) if b else "nothing more"
        lead = "this branch goes different ways in different iterations" if branch is not None else \
            "the step runs different ops in different iterations"
        scheduler = "scheduler" in (optim_source(trace, a), optim_source(trace, b))  # its epoch count is Python
        out.append(finding_for("CG302", branch or where, f"{lead}: iteration {al.a.index} runs {ra} where "
                               f"iteration {al.b.index} runs {rb}; replay repeats the captured branch"
                               + (" (the learning-rate scheduler branches on its Python epoch count)" if scheduler
                                  else ""), hint=SCHEDULER_HINT if scheduler else None))
    return out


def _line(f: Frame | None) -> tuple[str, int] | None:
    return (f.file, f.line) if f is not None else None


def _branch_of(trace: Trace, a: OpRecord | None, b: OpRecord | None) -> tuple[Frame | None, Frame | None]:
    """(frame to blame without a branch, frame of the branch statement or None)."""
    ops = [o for o in (a, b) if o is not None]
    fallback = trace.frame(ops[-1].frame)
    for attr in ("frame", "outer"):
        frames = [f for f in (trace.frame(getattr(o, attr)) for o in ops) if f is not None]
        if len(frames) < len(ops):
            continue
        fa, fb = frames[0], frames[-1]
        if fa.file != fb.file or fa.function != fb.function:
            continue
        line = _separating_branch(fa.file, fa.line, fb.line) if len(ops) == 2 else _enclosing_branch(fa.file, fa.line)
        if line is not None:
            return fallback, make_frame(fa.file, line, fa.function)
    return fallback, None


@functools.lru_cache(maxsize=64)
def _branch_nodes(path: str) -> tuple[ast.AST, ...]:
    from cgtool.errors import CgtoolError
    from cgtool.files.inputs import SCRIPT, read_input

    try:
        tree = ast.parse(read_input(path, SCRIPT), path)
    except (CgtoolError, SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(n for n in ast.walk(tree) if isinstance(n, _BRANCHES) and hasattr(n, "lineno"))


def _part(node: ast.AST, line: int) -> str:
    """Which part of a branch statement a line is in: outside, head, body, orelse, handlers."""
    if not (_first(node) <= line <= _last(node)):
        return "outside"
    for name in ("body", "orelse", "handlers", "finalbody", "cases", "values", "ifs"):
        children = getattr(node, name, None)
        if children is None:
            continue
        for i, child in enumerate(children if isinstance(children, list) else [children]):
            if getattr(child, "lineno", 0) <= line <= (getattr(child, "end_lineno", 0) or 0):
                return f"{name}{i}" if name in ("values", "cases", "handlers", "ifs") else name
    return "head"


def _span(node: ast.AST) -> int:
    return _last(node) - _first(node)


def _first(node: ast.AST) -> int:
    """The node's first line (_branch_nodes keeps only nodes that have one)."""
    return int(getattr(node, "lineno", 0))


def _last(node: ast.AST) -> int:
    return int(getattr(node, "end_lineno", None) or _first(node))


def _separating_branch(path: str, la: int, lb: int) -> int | None:
    """The innermost branch statement that puts the two lines in different parts; of those, one that starts before
    both lines where there is one (a loop after an `if` that skipped an op does not decide it: the `if` does)."""
    separating = [node for node in _branch_nodes(path) if _part(node, la) != _part(node, lb)]
    before = [node for node in separating if _first(node) <= min(la, lb)]
    return _head_line(min(before or separating, key=_span, default=None))


def _enclosing_branch(path: str, line: int) -> int | None:
    best = None
    for node in _branch_nodes(path):
        if _part(node, line) not in ("outside", "head") and (best is None or _span(node) < _span(best)):
            best = node
    return _head_line(best)


def _head_line(node: ast.AST | None) -> int | None:
    if node is None:
        return None
    if isinstance(node, ast.comprehension):
        return node.target.lineno
    return _first(node)
