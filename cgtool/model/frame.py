"""Frame: one line of the user's code (file, line, function, source text)."""

from __future__ import annotations

from dataclasses import dataclass

from cgtool.model.codec import Record


@dataclass(frozen=True)
class Frame(Record):
    """One frame of the user's code."""

    file: str
    line: int
    function: str = ""  # (a JSON frame without one reads as "")
    source: str = ""
