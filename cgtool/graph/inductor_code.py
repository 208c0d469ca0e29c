"""The kernel launches of a module inductor generated (torch.compile), read as text: each launch in `call()` order
with the FX nodes it was made from ("Topologically Sorted Source Nodes: [...]"), and the user's frames of an FX
node's stack trace, from inductor's own line map of the module (PyCodeCache.linemaps: the line where each scheduled
node's code starts, with its FX node's stack trace). With them a compiled graph's kernel nodes find their lines
(docs/node-lines.md). Tested on inductor's CPU output and on the Triton output recorded on an H200."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace

from cgtool.graph.model import Graph
from cgtool.graph.node_align import match

EXTERN = "extern"  # the key of a library call (cuBLAS, cuDNN, ...): its kernel's name is not in the code
_SOURCES = re.compile(r"#\s*Topologically Sorted Source Nodes:\s*\[([^\]]*)\](?:,\s*Original ATen:\s*\[([^\]]*)\])?")
_DEFINE = re.compile(r"^(\w+)\s*=\s*async_compile\.\w+\(")  # triton('name', ...) on a GPU, cpp_pybinding(...) on CPU
_RUN = re.compile(r"^\s*(\w+)\.run\(")
_CALL = re.compile(r"^\s*(\w+)\(")
_EXTERN = re.compile(r"^\s*extern_kernels\.(\w+)\(")
_FALLBACK = re.compile(r"^\s*(?:\w+\s*=\s*)?torch\.ops\.(\w+)\.(\w+)\.\w+\(")  # an aten op inductor left to torch
_PICK = re.compile(r"^\s*buf\d+\s*=\s*buf\d+\[\d+\]\s*$")  # a multi-output op's pick: a line-map entry, no launch
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


@dataclass(frozen=True)
class Launch:
    kernel: str  # the generated kernel's name, or "extern:<op>" for a library call
    sources: tuple[str, ...] = ()  # FX node names
    aten: tuple[str, ...] = ()  # the aten ops inductor lowered into it
    line: int = 0  # 1-based line of the launch in the generated module
    stack: str = ""  # the stack trace of the FX node inductor's line map gives this launch ("" when none)

    @property
    def key(self) -> str:
        return library_key(self.kernel) if self.kernel.startswith(EXTERN + ":") else self.kernel


ATTENTION = EXTERN + ":attention"  # the key of an attention op left to torch (flash, memory-efficient, cuDNN)
_ATTENTION_KERNEL = re.compile(r"fmha|flash|attention|attn", re.IGNORECASE)


def library_key(name: str) -> str:
    """The key a library call's launch ("extern:aten._scaled_dot_product_efficient_attention") and a kernel of no
    generated code share: attention apart from the rest (GEMMs, mostly), so that a GEMM's extra kernel (split-K)
    cannot push the attention kernel onto the next call."""
    return ATTENTION if _ATTENTION_KERNEL.search(name) else EXTERN


def launches(code: str, linemap: Sequence[Sequence[object]] | None = None) -> list[Launch]:
    """The launches of `call()` in order; a generated kernel takes the source nodes written above its definition,
    a library call those written above it. `linemap`: inductor's ([start lines], [stack traces]) of the module
    (PyCodeCache.linemaps[path]); see with_stacks."""
    defined: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    pending: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    out: list[Launch] = []
    in_call = False
    for number, line in enumerate(code.splitlines(), 1):
        m = _SOURCES.search(line)
        if m:
            pending = (_names(m.group(1)), _names(m.group(2) or ""))
            continue
        m = _DEFINE.match(line)
        if m:
            defined[m.group(1)] = pending
            pending = ((), ())
            continue
        if re.match(r"^\s*def call\(", line):
            in_call, pending = True, ((), ())
            continue
        if not in_call:
            continue
        op = _library_op(line)
        if op is not None:
            out.append(Launch(f"{EXTERN}:{op}", *pending, line=number))
            pending = ((), ())
            continue
        m = _RUN.match(line) or _CALL.match(line)
        if m and m.group(1) in defined:
            sources, aten = defined[m.group(1)]
            out.append(Launch(m.group(1), sources or pending[0], aten or pending[1], line=number))
            pending = ((), ())
    return with_stacks(out, linemap, code.splitlines()) if linemap else out


def _library_op(line: str) -> str | None:
    """The library op a line of `call` runs instead of a generated kernel (`extern_kernels.mm(...)`, an aten
    fallback), or None."""
    m = _EXTERN.match(line)
    if m:
        return m.group(1)
    f = _FALLBACK.match(line)
    return f"{f.group(1)}.{f.group(2)}" if f else None


def with_stacks(found: Sequence[Launch], linemap: Sequence[Sequence[object]], code: Sequence[str] = ()) -> list[Launch]:
    """Each launch with its FX node's stack trace from inductor's line map: the map has one entry per scheduled
    node, at the line where that node's code starts, in the order the nodes were generated; a launch can come
    after the next node's start (inductor writes an input's size assert where it is first used), so the k-th
    launch takes the earliest entry not yet taken that starts at or before its line. Entries of nodes that
    launch nothing (a multi-output op's `bufN = bufM[0]`, seen in `code`) are passed over."""
    if len(linemap) < 2:
        return list(found)
    starts = [int(x) for x in linemap[0]]  # type: ignore[call-overload]
    traces = [str(t) if t else "" for t in linemap[1]]
    picks = {k for k, st in enumerate(starts) if 0 < st <= len(code) and _PICK.match(code[st - 1])}
    order = sorted((k for k in range(len(starts)) if k not in picks), key=lambda k: starts[k])
    sorted_starts = [starts[k] for k in order]
    taken: set[int] = set()
    out = []
    for x in found:
        stack = ""
        for k in order[:bisect_right(sorted_starts, x.line)]:
            if k not in taken:
                taken.add(k)
                stack = traces[k]
                break
        out.append(replace(x, stack=stack))
    return out


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def stack_frames(stack_trace: str | None) -> list[tuple[str, int, str]]:
    """(file, line, function) of each frame of an FX node's stack trace, outermost first."""
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in _FRAME.finditer(stack_trace or "")]


def node_launches(graph: Graph, found: Sequence[Launch]) -> dict[int, Launch]:
    """Kernel node id -> the launch that made it: generated kernels by name and order; a library call's kernels
    (named in no code) by order between them, and a library kernel the call launched after its first (a split-K
    reduction) takes the same launch."""
    kernels = graph.kernels
    generated = {x.kernel for x in found}
    keys = [(n.mangled or n.name) if (n.mangled or n.name) in generated else library_key(n.demangled or n.name)
            for n in kernels]
    got = match(keys, [x.key for x in found])
    out: dict[int, Launch] = {n.id: found[j] for n, j in zip(kernels, got) if j is not None}
    # a library call's other kernels sit next to the one matched: the previous matched node's call, else the next's
    for order in (kernels, kernels[::-1]):
        near: Launch | None = None
        for node, key in zip(order, keys if order is kernels else keys[::-1]):
            if node.id in out:
                near = out[node.id]
            elif key.startswith(EXTERN) and near is not None and near.key == key:
                out[node.id] = near
            else:
                near = None
    return out
