"""The parts of a report that other records share: an error by phase, the replay-versus-eager check and its
tensors, eager-versus-replay timings. Re-exported by cgtool.model.report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cgtool.model.codec import Record, decode, is_empty, meta
from cgtool.model.frame import Frame


@dataclass(frozen=True)
class ErrorRecord(Record):
    """Something that went wrong in a phase, with the user's frames (innermost last)."""

    phase: str  # load, setup, inputs, warmup, capture, read-graph, replay, timing, worker, output
    type: str  # exception type name, or "timeout", "crash", "interrupted"
    message: str
    frames: tuple[Frame, ...] = ()
    cuda_error: str | None = None  # e.g. "cudaErrorStreamCaptureInvalidated", when one was named
    # a failed capture (GPU): the user's lines ("file:line") where the capture issued work before it failed, and
    # got past; the checks refute a capture-fails finding at such a line (checks/verdict.py)
    passed: tuple[str, ...] = field(default=(), metadata=meta(omit=is_empty))

    @property
    def user_frame(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    @property
    def label(self) -> str:
        """What goes before the message: `RuntimeError [cudaErrorX]: `; nothing for a broken script
        contract (type usage), whose message says it all."""
        if self.type == "usage":
            return ""
        return f"{self.type}{f' [{self.cuda_error}]' if self.cuda_error else ''}: "


# Skip.code values: what could not run, and why, as data (Skip.text says it in words)
NO_CUDA = "no-cuda"  # a CPU-only run: capture, graph, replay check and timing need a CUDA device
CAPTURE_STOPPED = "capture-failed"  # graph, replay check and timing after a failed capture
PEERS_NOT_READY = "peers-not-ready"  # a rank skipped the phases that run collectives: a peer failed or is stuck
PROFILER_FAILED = "profiler-failed"  # replay time per node, eager versus replay per line: the profiler failed
NODE_LINES = "node-lines"  # the compiled graph's nodes could not be mapped to lines
TRACER_STOPPED = "tracer-stopped"  # part of the CPU analysis: the tracer stopped recording
HIGHER_ORDER_OP = "higher-order-op"  # the CPU analysis stopped at a higher-order operator
NOT_IN_GRAPHS = "outside-compiled"  # CPU findings in code that runs outside torch.compile's CUDA graphs
RULES_NOT_CHECKED = "rules-not-checked"  # a family of rules that this kind of run cannot check
WHOLE_STEP = "whole-step"  # the CPU analysis of the whole step after a failed capture could not finish
OUTPUT_FILE = "output-file"  # an output file (a picture, a DOT, the plan) could not be written or read
OLDER_REPORT = "unknown"  # a skipped entry of a report older than schema 3 (plain text)
NO_CUDA_TEXT = "capture, graph, replay check and timing need a CUDA device"  # the text of a CPU-only run's skip
_OLDER_CODES = {NO_CUDA_TEXT: NO_CUDA}  # plain sentences of reports before schema 3 whose code a decision reads


@dataclass(frozen=True)
class Skip(Record):
    """A phase or a group of checks that could not run: `code` (what and why, as data) and `text` (in words)."""

    code: str
    text: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | str) -> Skip:
        """A skipped entry of any readable schema: before schema 3 a plain sentence."""
        return decode(cls, d)

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        if isinstance(d, str):  # the one sentence a decision needs is known by its code (a CPU run's own skip)
            return {"code": _OLDER_CODES.get(d, OLDER_REPORT), "text": d}
        return super().json_in(d)


@dataclass(frozen=True)
class TensorDiff(Record):
    """Replay-versus-eager comparison of one output or state tensor."""

    name: str  # e.g. "output[0]", "state.model.fc1.weight"
    shape: tuple[int, ...]
    dtype: str
    max_abs: float
    max_rel: float
    ok: bool
    # How far two eager runs from the same state differ (nondeterministic kernels: atomics in backward,
    # cuDNN algorithms); replay within NOISE_FACTOR times that counts as a match. 0 when eager repeats exactly.
    noise_abs: float = 0.0


@dataclass(frozen=True)
class ReplayCheck(Record):
    JSON_ORDER = ("status", "inputs", "max_abs", "max_rel", "tensors", "note", "steps", "first_differing_step",
                  "counters", "reference")
    JSON_COMPUTED = {"max_abs": lambda r: r.max_abs, "max_rel": lambda r: r.max_rel}

    status: str  # "match", "mismatch", "skipped", "error"
    inputs: str  # which inputs were compared, e.g. "inputs(4)..inputs(9), fresh: 6 consecutive step(s) ..."
    tensors: tuple[TensorDiff, ...] = ()  # a match: each tensor's worst step; a mismatch: the first differing step's
    note: str = ""
    steps: int = 1  # consecutive steps to compare from identical state (the run stops at the first that differs)
    first_differing_step: int | None = None  # 1-based; None when every step matched
    # integer state tensors one eager step advanced (a static cache's write position, a step count): calls in a
    # row carry them further, so timing runs blocks of at most `steps` calls, each from the checked state
    counters: tuple[str, ...] = ()
    # what the other run was judged against when not eager: a pieced step whose difference from eager is
    # torch.compile's own rounding is judged against the same step compiled without CUDA graphs (capture/pieced_check.py)
    reference: str = field(default="", metadata=meta(omit=is_empty))

    @property
    def max_abs(self) -> float:
        return max((t.max_abs for t in self.tensors), default=0.0)

    @property
    def verdict(self) -> str:
        """"matches eager", "differs from eager", "skipped against eager", or against `reference` instead."""
        verb = {"match": "matches", "mismatch": "differs from"}.get(self.status, f"{self.status} against")
        return f"{verb} {self.reference or 'eager'}"

    @property
    def max_rel(self) -> float:
        return max((t.max_rel for t in self.tensors), default=0.0)


@dataclass(frozen=True)
class Timings(Record):
    JSON_COMPUTED = {"speedup": lambda t: t.speedup}

    eager_us: float  # median per-iteration time of the eager step
    replay_us: float  # median per-iteration time of graph replay
    iterations: int  # iterations per mode that the medians summarize
    capture_ms: float | None = None
    instantiate_ms: float | None = None
    method: str = ""

    @property
    def speedup(self) -> float:
        return self.eager_us / self.replay_us if self.replay_us > 0 else float("nan")
