"""Job: what one worker process is asked to do (capture, lint's analysis, bench or partial capture), as sent over
the process boundary, with its settings as one frozen dataclass per kind. Built once by the commands, read by the
pipeline; every setting's default is written here and nowhere else. Job and settings are records of the one
codec (model/codec.py); the settings are a union tagged by the job's kind, read by Job.json_in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, dataclass, fields, replace
from typing import Any, TypeVar

from cgtool.model.codec import Record

CAPTURE = "capture"  # capture pipeline (also lint's analysis); CPU analysis when there is no GPU
BENCH = "bench"  # careful eager-versus-replay timing
PARTIAL = "partial"  # partial capture: the step in pieces (--piecewise), the module map (--modules DEPTH)
KINDS = (CAPTURE, BENCH, PARTIAL)

# Steps the replay check compares when the user does not say (--check-steps; capture/compare_runs.py): enough for
# a training step's optimizer moments, momentum, scheduler, BatchNorm and step counters to move from step to step
# (the ResNet plan of issue 36 matched eager for two steps and differed from the third).
CHECK_STEPS = 6
COMPILED_STEADY = 8  # iterations after warmup in a compiled run: recording on the 2nd call, re-records within a few more
# bench measures at least this long before calling a run converged: the host's slow spells last seconds, and a run
# that converges within one of them (0.25 s on the MLP sample) would have no full-speed block to compare with.
MIN_TIME_S = 2.0
CAPTURE_MODES = ("global", "thread_local", "relaxed")


@dataclass(frozen=True)
class RunSettings(Record):
    """What every job kind reads: the warmup, the size passed to setup/inputs, the contract's names for setup and
    inputs (None: the script has none; cgtool.check with a step callable), and torch's capture_error_mode.
    Built with the wrong type for a field, or (from JSON) with a key the kind does not have, is an error."""

    warmup: int = 3
    size: int | None = None
    setup_fn: str | None = "setup"
    inputs_fn: str | None = "inputs"
    capture_mode: str = "global"

    def __post_init__(self) -> None:
        for f in fields(self):
            _check_type(f, getattr(self, f.name))
        if self.warmup < 0:
            raise ValueError(f"setting warmup must be >= 0, not {self.warmup}")
        if self.capture_mode not in CAPTURE_MODES:
            raise ValueError(f"setting capture_mode must be one of {', '.join(CAPTURE_MODES)}, not {self.capture_mode!r}")

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        """A key the kind does not have is an error that names the known ones; each value is checked against its
        field's type as JSON gives it (the codec would read "3" as 3 and 1 as True)."""
        given = super().json_in(d)
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for "
                             f"{cls.__name__}; known: {', '.join(sorted(known))}")
        for name, f in known.items():
            if name in given:
                _check_type(f, given[name])
        return given


@dataclass(frozen=True)
class CaptureSettings(RunSettings):
    """A capture job (`capture`, `lint`, `cgtool.check`, a rank of a distributed run, bench on ranks)."""

    replay_check: bool = True  # compare replay with eager over check_steps steps
    check_steps: int = CHECK_STEPS
    timing: bool = True  # capture's quick eager-versus-replay timing
    timing_budget_s: float = 3.0
    timing_per_block: int = 10  # a rank's lockstep timing: iterations per block
    timing_l2_flush: bool = False  # a rank's lockstep timing: flush the L2 cache before every timed call
    checks: bool = True  # trace the step and run the rules
    node_lines: bool = False  # which line launched each graph node (a second, profiled replay)
    compiled_steady: int = COMPILED_STEADY
    collective_timeout_s: float = 120.0  # a rank: how long a collective may wait for the others
    linger_s: float = 15.0  # a rank that finished first: how long it waits for the others to stop needing it
    rank: int | None = None  # set in a rank's worker (pipeline/rank_job.py), None elsewhere
    world_size: int | None = None


@dataclass(frozen=True)
class MeasureSettings(RunSettings):
    """bench's alternating measurement of eager against replay (`bench`, and the timing of capture's runs)."""

    budget_s: float = 10.0
    target: float = 0.01  # the relative half-width of the confidence interval that stops the measurement
    iters: int | None = None  # a fixed number of iterations per mode instead of the stopping rule
    min_time_s: float = MIN_TIME_S
    block_ms: float = 5.0
    l2_flush: bool = False


@dataclass(frozen=True)
class BenchSettings(MeasureSettings):
    """A bench job: the measurement, per size of `sizes` (None: one run without a size)."""

    sizes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sizes is not None and not isinstance(self.sizes, tuple):
            object.__setattr__(self, "sizes", tuple(self.sizes))  # JSON gives a list


@dataclass(frozen=True)
class PartialSettings(RunSettings):
    """A partial-capture job: the step in pieces and/or the module map to DEPTH, checked and timed."""

    piecewise: bool = False
    modules: int | None = None  # the module map's depth
    keep_graphs: bool = True  # keep every piece's graph alive (a rerun in a fresh worker sets False)
    replay_check: bool = True
    check_steps: int = CHECK_STEPS
    timing: bool = True
    timing_budget_s: float = 3.0  # the short timing (capture --piecewise)
    careful: bool = False  # bench's careful timing (bench --piecewise) with budget_s, target, iters
    budget_s: float = 10.0
    target: float = 0.01
    iters: int | None = None


_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,),
                                      "None": (type(None),), "tuple[int, ...]": (tuple, list)}


def _check_type(f: Field[Any], value: Any) -> None:
    if not _is_a(value, str(f.type)):
        raise ValueError(f"setting {f.name} must be {f.type}, not {value!r}")


def _is_a(value: Any, annotation: str) -> bool:
    """Whether `value` fits a settings field's annotation (the few plain types settings use; a bool is no number)."""
    for name in annotation.split(" | "):
        types = _TYPES[name]
        if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
            return True
    return False


Settings = CaptureSettings | BenchSettings | PartialSettings
SETTINGS: dict[str, type[Settings]] = {CAPTURE: CaptureSettings, BENCH: BenchSettings, PARTIAL: PartialSettings}
S = TypeVar("S", bound=RunSettings)


def kind_of(settings: RunSettings) -> str:
    """The job kind whose settings these are."""
    return next(kind for kind, cls in SETTINGS.items() if type(settings) is cls)


def carry_over(settings: RunSettings, kind: type[S], **changes: Any) -> S:
    """Settings of another kind that keep every field the two kinds share (capture's warmup, names, checks and
    timing into a partial job), with `changes` on top."""
    names = {f.name for f in fields(kind)}
    return kind(**{f.name: getattr(settings, f.name) for f in fields(settings) if f.name in names}, **changes)


@dataclass(frozen=True)
class Job(Record):
    """The job file (worker/client.py writes it, worker/child.py and rank_child.py read it): every field, the
    settings as every field of the kind's settings (tuples as lists), the same keys report.json's `settings` holds."""

    kind: str  # CAPTURE, BENCH or PARTIAL
    script: str  # absolute path of the user's script
    entry: str  # the function to capture ("step")
    settings: Any = None  # the kind's settings (SETTINGS[kind]); None: its defaults
    force_cpu: bool = False  # run the CPU analysis even where a GPU is present
    work_dir: str | None = None  # where the worker may write files (the driver's DOT)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown job kind {self.kind!r}")
        expected = SETTINGS[self.kind]
        if self.settings is None:
            object.__setattr__(self, "settings", expected())
        elif type(self.settings) is not expected:
            raise TypeError(f"a {self.kind} job takes {expected.__name__}, not {type(self.settings).__name__}")

    def with_work_dir(self, work_dir: str | None) -> Job:
        return replace(self, work_dir=work_dir)

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        """A known kind and no field a job does not have; `settings` (null: the kind's defaults) read as the
        settings of `kind`: the codec reads a field by its type alone, and this field's type is told by another."""
        given = super().json_in(d)
        kind = given.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown job kind {kind!r}")
        unknown = sorted(set(given) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown job field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        return {**given, "settings": SETTINGS[kind].from_json(given.get("settings") or {})}
