"""The modules inductor generated in this process (torch.compile), read back for the lines of compiled graphs'
nodes (cgtool/graph/inductor_code.py): each module's code and inductor's line map of it."""

from __future__ import annotations

from typing import Any


def generated_modules() -> list[tuple[str, str, Any]]:
    """(path, code, linemap) of each generated module that has a `call()` (a compiled graph's wrapper; the
    Triton kernels' own modules have none), in the order inductor loaded them.
    linemap: PyCodeCache.linemaps[path], ([start lines], [stack traces]), or None."""
    try:
        from torch._inductor.codecache import PyCodeCache
    except ImportError:
        return []
    mods = getattr(PyCodeCache, "modules", None)  # a list in load order (torch 2.11, 2.13)
    if isinstance(mods, dict):
        mods = list(mods.values())
    elif not isinstance(mods, list):  # older: only the cache of modules by key
        mods = list(getattr(PyCodeCache, "cache", {}).values())
    out = []
    for mod in mods:
        path = getattr(mod, "__file__", None)
        if not path:
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                code = fh.read()
        except OSError:
            continue
        if "def call(" in code:
            out.append((path, code, getattr(PyCodeCache, "linemaps", {}).get(path)))
    return out

