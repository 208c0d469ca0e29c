"""`# expect: CGxxx` markers: the rules a marked line of a hazard script must produce. One parser for the CPU
tests and the GPU tests."""

from __future__ import annotations

import re

MARKER = re.compile(r"#\s*expect:\s*(CG\d{3}(?:[\s,]+CG\d{3})*)")


def markers(path: str) -> list[tuple[int, str]]:
    """(line, rule) for every rule a marker names, in file order (`# expect: CG201, CG202` gives two)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, text in enumerate(fh, 1):
            m = MARKER.search(text)
            if m:
                out += [(n, rule) for rule in re.findall(r"CG\d{3}", m.group(1))]
    return out


def markers_with_imports(path: str) -> set[tuple[str, int, str]]:
    """(file, line, rule) of the markers in a script and in the modules of its own folder it imports (a compile
    call or a graph break that sits in a helper module the script imports)."""
    import ast
    import os

    out = {(path, n, r) for n, r in markers(path)}
    base = os.path.dirname(path)
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            mod = os.path.join(base, *name.split(".")) + ".py"
            if os.path.exists(mod):
                out |= {(mod, n, r) for n, r in markers(mod)}
    return out
