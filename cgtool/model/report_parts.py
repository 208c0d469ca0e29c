"""The parts of a report that other records share: an error by phase, the replay-versus-eager check and its
tensors, eager-versus-replay timings. Re-exported by cgtool.model.report."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from cgtool.model.frame import Frame


@dataclass(frozen=True)
class ErrorRecord:
    """Something that went wrong in a phase, with the user's frames (innermost last)."""

    phase: str  # load, setup, inputs, warmup, capture, read-graph, replay, timing, worker, output
    type: str  # exception type name, or "timeout", "crash", "interrupted"
    message: str
    frames: tuple[Frame, ...] = ()
    cuda_error: str | None = None  # e.g. "cudaErrorStreamCaptureInvalidated", when one was named
    # a failed capture (GPU): the user's lines ("file:line") where the capture issued work before it failed, and
    # got past; the checks refute a capture-fails finding at such a line (checks/verdict.py)
    passed: tuple[str, ...] = ()

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

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "type": self.type,
            "message": self.message,
            "frames": [f.to_json() for f in self.frames],
            "cuda_error": self.cuda_error,
            **({"passed": list(self.passed)} if self.passed else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ErrorRecord:
        return cls(
            phase=d["phase"],
            type=d["type"],
            message=d["message"],
            frames=tuple(Frame.from_json(f) for f in d.get("frames", [])),
            cuda_error=d.get("cuda_error"),
            passed=tuple(d.get("passed", ())),
        )


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
class Skip:
    """A phase or a group of checks that could not run: `code` (what and why, as data) and `text` (in words)."""

    code: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "text": self.text}

    @classmethod
    def from_json(cls, d: dict[str, Any] | str) -> Skip:
        """A skipped entry of any readable schema: before schema 3 a plain sentence."""
        if isinstance(d, str):  # the one sentence a decision needs is known by its code (a CPU run's own skip)
            return cls(_OLDER_CODES.get(d, OLDER_REPORT), d)
        return cls(d["code"], d["text"])


@dataclass(frozen=True)
class TensorDiff:
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

    def to_json(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TensorDiff:
        return cls(d["name"], tuple(d["shape"]), d["dtype"], float(d["max_abs"]), float(d["max_rel"]), bool(d["ok"]),
                   float(d.get("noise_abs", 0.0)))


@dataclass(frozen=True)
class ReplayCheck:
    status: str  # "match", "mismatch", "skipped", "error"
    inputs: str  # which inputs were compared, e.g. "inputs(4)..inputs(9), fresh: 6 consecutive step(s) ..."
    tensors: tuple[TensorDiff, ...] = ()  # a match: each tensor's worst step; a mismatch: the first differing step's
    note: str = ""
    steps: int = 1  # consecutive steps to compare from identical state (the run stops at the first that differs)
    first_differing_step: int | None = None  # 1-based; None when every step matched
    # integer state tensors one eager step advanced (a static cache's write position, a step count): calls in a
    # row carry them further, so timing runs blocks of at most `steps` calls, each from the checked state
    counters: tuple[str, ...] = ()

    @property
    def max_abs(self) -> float:
        return max((t.max_abs for t in self.tensors), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((t.max_rel for t in self.tensors), default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "inputs": self.inputs,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "tensors": [t.to_json() for t in self.tensors],
            "note": self.note,
            "steps": self.steps,
            "first_differing_step": self.first_differing_step,
            "counters": list(self.counters),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ReplayCheck:
        return cls(d["status"], d["inputs"], tuple(TensorDiff.from_json(t) for t in d.get("tensors", [])),
                   d.get("note", ""), int(d.get("steps", 1)), d.get("first_differing_step"),
                   tuple(d.get("counters", ())))


@dataclass(frozen=True)
class Timings:
    eager_us: float  # median per-iteration time of the eager step
    replay_us: float  # median per-iteration time of graph replay
    iterations: int  # iterations per mode that the medians summarize
    capture_ms: float | None = None
    instantiate_ms: float | None = None
    method: str = ""

    @property
    def speedup(self) -> float:
        return self.eager_us / self.replay_us if self.replay_us > 0 else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "speedup": self.speedup}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Timings:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})
