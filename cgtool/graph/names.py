"""Kernel names: demangle Itanium symbols (libstdc++'s __cxa_demangle) and shorten them for people."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
from typing import Any


@functools.cache
def _load_demangler() -> tuple[Any, Any] | None:
    """libstdc++'s __cxa_demangle and libc's free, or None where they cannot be loaded."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        fn = lib.__cxa_demangle
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
        return fn, free
    except (OSError, AttributeError):
        return None


@functools.lru_cache(maxsize=4096)
def demangle(symbol: str) -> str:
    """The demangled form of an Itanium-mangled symbol; other names come back unchanged."""
    if not symbol.startswith("_Z"):
        return symbol
    lib = _load_demangler()
    if lib is None:
        return symbol
    fn, free = lib
    status = ctypes.c_int(0)
    ptr = fn(symbol.encode(), None, None, ctypes.byref(status))
    if status.value or not ptr:
        return symbol
    try:
        return ctypes.string_at(ptr).decode(errors="replace")
    finally:
        free(ptr)


def _split_top(text: str, open_: str, close: str) -> tuple[str, str | None]:
    """Split `name<args>` at its first top-level `open_`; return (head, inside) or (text, None)."""
    depth = 0
    start = -1
    for i, ch in enumerate(text):
        if ch == open_:
            if depth == 0:
                start = i
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0 and start >= 0:
                return text[:start], text[start + 1 : i]
    return text, None


def _top_level_args(inside: str) -> list[str]:
    args: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in inside:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur:
        args.append("".join(cur).strip())
    return args


def _components(qualified: str) -> list[str]:
    """`a::f(int)::{lambda()#1}` -> ["a", "f", "{lambda()#1}"], splitting only at depth 0."""
    parts: list[str] = []
    cur: list[str] = []
    depth = i = 0
    while i < len(qualified):
        ch = qualified[i]
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth -= 1
        if depth == 0 and qualified.startswith("::", i):
            parts.append("".join(cur).strip())
            cur = []
            i += 2
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def _basename(qualified: str) -> str:
    """The most telling name in a qualified name: for lambdas, the function that encloses them."""
    names = []
    for comp in _components(qualified.replace("(anonymous namespace)", "anon")):
        if comp.startswith(("{lambda", "{unnamed", "operator()")) or comp in ("anon", "const"):
            continue
        head, _ = _split_top(comp, "<", ">")
        head, _ = _split_top(head, "(", ")")
        names.append(head.strip())
    return names[-1] if names else ""


_NOISE = re.compile(r"^(?:-?\d+[a-zA-Z]*|true|false|\(.*\)\d*|bool|char|short|int|long|unsigned.*|float|double|c10::.*)$")


_FUNCTOR = re.compile(r"\b(\w*Functor\w*|\w+Ops?)\b")
_WRAPPERS = {"BinaryFunctor", "UnaryFunctor", "BUnaryFunctor", "AUnaryFunctor", "ReduceOp"}


@functools.lru_cache(maxsize=4096)
def short_name(symbol: str, limit: int = 60) -> str:
    """A readable name: `vectorized_elementwise_kernel<FillFunctor>` for long ATen symbols."""
    text = demangle(symbol).replace("(anonymous namespace)", "anon")
    # Drop a leading return type ("void ") and the parameter list of a demangled function.
    if text.startswith("void "):
        text = text[5:]
    name_part = text
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            name_part = text[:i]
            break
    head, inside = _split_top(name_part, "<", ">")
    base = _basename(head) or head.strip()
    detail = ""
    if inside:
        for arg in _top_level_args(inside):
            if _NOISE.match(arg) or not arg:
                continue
            functors = [f for f in _FUNCTOR.findall(arg) if f not in _WRAPPERS]
            cand = functors[-1] if functors else _basename(arg)
            if cand and not cand[0].isdigit() and cand != base:
                detail = cand
                break
    out = f"{base}<{detail}>" if detail else base
    if len(out) > limit:
        out = out[: limit - 1] + "…"
    return out
