"""Frame: one line of the user's code (file, line, function, source text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Frame:
    """One frame of the user's code."""

    file: str
    line: int
    function: str
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "source": self.source}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Frame:
        return cls(d["file"], int(d["line"]), d.get("function", ""), d.get("source", ""))
