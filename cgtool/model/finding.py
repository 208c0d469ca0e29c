"""Finding: one problem with capture, attributed to a line of the user's code."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SEVERITIES = ("error", "warning", "info")

# Finding.evidence values: what the real capture and replay on the GPU said about a finding from the trace.
CONFIRMED = "confirmed"  # the capture failed at this line, or replay differed from eager as the finding predicts
REFUTED = "refuted"  # the capture succeeded / replay matched where the finding predicted otherwise (now info)
UNTESTED = "untested"  # the real run could not tell (capture stopped earlier, replay check not run, ...)
# the capture failed before it could test this finding: it comes from the CPU analysis of the whole step, run
# because the real capture stopped at its first failure (docs/checks.md, "Every hazard in one run")
NOT_REACHED = "not-reached"
EVIDENCE = (CONFIRMED, REFUTED, UNTESTED, NOT_REACHED)
# How every renderer names them.
EVIDENCE_WORDS = {CONFIRMED: "confirmed by the capture", REFUTED: "refuted by the capture",
                  UNTESTED: "not tested by the capture", NOT_REACHED: "not reached by the capture"}

# The fixed category vocabulary (JSON field `category`). New ones may be added; these keep their names.
CATEGORIES = (
    "sync",
    "uncaptured-work",
    "default-stream",
    "unjoined-stream",
    "dynamic-shape",
    "control-flow",
    "rng",
    "host-input",
    "replay-mismatch",
    "warmup",
    "capture-error",
    "empty-graph",
    "distributed",
    "compiled",
    "rebound-state",
)


@dataclass(frozen=True)
class Finding:
    rule: str  # stable id, e.g. "CG101"
    category: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    source: str | None = None  # the text of that line
    hint: str | None = None  # the concrete fix
    function: str | None = None
    # What the real capture said about this finding (GPU run): CONFIRMED, REFUTED, UNTESTED or NOT_REACHED; None for the
    # CPU analysis and for findings that are themselves observations of the real capture (CG501-CG503).
    evidence: str | None = None
    library: str | None = None  # the innermost library frame that issued the op ("pkg/mod.py:12 in fn")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})

    @property
    def status(self) -> str:
        """" (confirmed by the capture)" and the like, for renderers; "" where no real capture judged it."""
        return f" ({EVIDENCE_WORDS[self.evidence]})" if self.evidence in EVIDENCE_WORDS else ""

    @property
    def location(self) -> str:
        if self.file is None:
            return "<script>"
        return f"{self.file}:{self.line}" if self.line else self.file
