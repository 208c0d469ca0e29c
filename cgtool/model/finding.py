"""Finding: one problem with capture, attributed to a line of the user's code."""

from __future__ import annotations

from dataclasses import dataclass

from cgtool.model.codec import Record


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
    "python-state",
)


# Finding.origin values: which analysis made the finding.
CPU_TRACE = "cpu-trace"  # the tracer on the CPU run (lint, capture without a GPU, the whole step after a failure)
GPU_TRACE = "gpu-trace"  # the tracer during the real GPU warmup and capture
GPU_CAPTURE = "gpu-capture"  # the real capture itself: its error, its graph, the replay check (CG403, CG501-CG503)
COMPILED = "compiled"  # what torch.compile and its CUDAGraph Trees did (CG701-CG705)
RANKS = "ranks"  # the ranks compared with each other (CG6xx)
SOURCE = "source"  # the script's text itself (CG001: a malformed `# cgtool: ignore`)
ORIGINS = (CPU_TRACE, GPU_TRACE, GPU_CAPTURE, COMPILED, RANKS, SOURCE)


@dataclass(frozen=True)
class Finding(Record):
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
    kind: str | None = None  # which of its rule's kinds (model/rules.py: Kind), e.g. CG402 "python-number"
    origin: str | None = None  # which analysis made it (ORIGINS); None in reports older than schema 3
    # what it predicts the real run does (model/rules.py: CAPTURE_FAILS, REPLAY_DIFFERS), from its rule and kind;
    # None for observations of the real run
    predicts: str | None = None
    reason: str | None = None  # why `evidence` is what it is, where a verdict says more than its word

    @property
    def status(self) -> str:
        """" (confirmed by the capture)" and the like, for renderers; "" where no real capture judged it."""
        return f" ({EVIDENCE_WORDS[self.evidence]})" if self.evidence in EVIDENCE_WORDS else ""

    @property
    def note(self) -> str:
        """The verdict's reason as renderers append it to the message: " [refuted: the real capture succeeded]",
        " [not reached: …]", " [not tested: …]", " (…)" for a confirmation; "" without a reason."""
        if not self.reason:
            return ""
        word = {REFUTED: "refuted", NOT_REACHED: "not reached", UNTESTED: "not tested"}.get(self.evidence or "")
        return f" [{word}: {self.reason}]" if word else f" ({self.reason})"

    @property
    def text(self) -> str:
        """The message with the verdict's reason: what every renderer shows."""
        return self.message + self.note

    @property
    def location(self) -> str:
        if self.file is None:
            return "<script>"
        return f"{self.file}:{self.line}" if self.line else self.file
