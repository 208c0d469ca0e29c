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
