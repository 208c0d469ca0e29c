"""The step captured in pieces: `torch.compile(step, backend="cudagraphs")`.

Dynamo splits the step at its graph breaks (`.item()`, `.tolist()`, data-dependent Python, `loss.backward()`);
the cudagraphs backend records each piece (forward and backward) as a CUDA graph of the original eager
kernels through torch's cudagraph trees, so a comparison with eager measures graphs, not kernel fusion.
Between pieces the step runs eagerly. cudagraph trees make their CUDAGraphs without keep_graph, so the
pieces' graphs could not be read; while the step compiles and records, torch.cuda.CUDAGraph is swapped for a
subclass that keeps its graph (instantiated on first replay, as torch does for keep_graph=True).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from cgtool.model.job import RunSettings
from cgtool.model.partial import SplitPoint
from cgtool.model.phase_log import PhaseLog
from cgtool.script.contract import Args, Script, ScriptRaised
from cgtool.script.session import ScriptSession
from cgtool.trace.patches import Patches

RECORD_CALLS = 3  # cudagraph trees: the first call warms up, the next records, later ones replay
SKIP_LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"  # where the backend says why it left a piece eager


@dataclass
class PiecedStep:
    """The step ready to run eager or in pieces, on the same state and static inputs."""

    eager: ScriptSession
    pieced: ScriptSession  # the same script with step = torch.compile(step, backend=...), on the same state
    static_inputs: Args | None
    stream: Any
    compile_ms: float  # dynamo, the backend and the first recordings
    splits: list[SplitPoint] = field(default_factory=list)
    dynamo_graphs: int = 0  # FX graphs dynamo handed to the backend (forward pieces; backward graphs come from them)
    kept: list[Any] = field(default_factory=list)  # the CUDAGraphs recorded that kept their graph, in order
    made: int = 0  # CUDAGraphs made while recording (kept or not)
    skips: list[str] = field(default_factory=list)
    backend: Any = None  # the backend torch.compile was given (ExplainWithBackend: its graphs and break reasons)
    now: str = "while recording the pieces"  # what the pieced step is being run for, for PiecedStepFailed

    @property
    def state(self) -> Args:
        return self.eager.setup()

    def run_eager(self, inputs: Args | None = None) -> Any:
        return self.eager.call(self.static_inputs if inputs is None else inputs)

    def run_pieced(self, inputs: Args | None = None) -> Any:
        """One call of the compiled step; what it raises (the eager step did not) is torch.compile's failure on
        this step: PiecedStepFailed, with what was running then (`self.now`)."""
        import torch

        torch.compiler.cudagraph_mark_step_begin()  # a new iteration: earlier outputs may be overwritten
        try:
            return self.pieced.call(self.static_inputs if inputs is None else inputs)
        except Exception as exc:
            raise PiecedStepFailed(self.now, exc) from None

    def graphs_compiled(self) -> int:
        """FX graphs dynamo has handed to the backend so far (more than after recording: it recompiled)."""
        return len(getattr(self.backend, "graphs", []) or [])


class PiecedStepFailed(ScriptRaised):
    """The step compiled with backend="cudagraphs" raised where the eager step did not."""


def prepare_pieced(script: Script, settings: RunSettings, log: PhaseLog, size: int | None = None,
                   keep: bool = True) -> PiecedStep:
    """setup → eager warmup on a side stream → compile and record the pieces on inputs(warmup), on the current
    stream (the stream every later run of the step uses). With `keep`, the
    CUDAGraphs the cudagraph trees make keep their cudaGraph_t (to be read later); without, torch is left alone.
    The eager warmup matters: state the step creates lazily (optimizer moments) is then made outside the pieces;
    made inside one, it would be a graph output that the next replay overwrites."""
    import torch

    torch._dynamo.reset()
    n_warm = settings.warmup
    session = ScriptSession(script, torch.device("cuda"), size)
    stream = session.set_up_and_warm(n_warm, log, "piecewise", f"{n_warm} eager iterations")
    static_inputs = session.inputs(n_warm)
    backend = _explaining_backend()
    compiled = torch.compile(script.step, backend=backend)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    # from here on every run of the step, eager or pieced, is on the current stream (see below)
    step = PiecedStep(session, session.with_script(dataclasses.replace(script, step=compiled)), static_inputs,
                      torch.cuda.current_stream(), 0.0)
    log.phase("compile", 'torch.compile(step, backend="cudagraphs"): pieces recorded')
    t0 = time.perf_counter()
    # recorded on the current stream, where the pieced step runs later (profile, replay check, timing) and where
    # a user calls a compiled step: a recording made on a side stream and a re-recording on another leave the
    # trees' pool with blocks of two streams, and torch 2.11's pool checkpoint then fails
    # ("curr_block->size == block_state.size", H100: module_breaks.py, whose float guard recompiles a piece)
    with kept_graphs(keep) as kept, skip_messages() as skips:
        for _ in range(RECORD_CALLS):
            step.run_pieced()
        torch.cuda.synchronize()
    step.compile_ms = (time.perf_counter() - t0) * 1e3
    step.made = len(kept)
    step.kept = [g for g in kept if _has_graph(g)]
    step.skips = list(dict.fromkeys(skips))
    step.splits = split_points(getattr(backend, "break_reasons", None))
    step.backend = backend
    step.dynamo_graphs = step.graphs_compiled()
    return step


def _explaining_backend() -> Any:
    """The cudagraphs backend wrapped to collect dynamo's graphs and break reasons (their user stacks)."""
    try:
        from torch._dynamo.backends.debugging import ExplainWithBackend

        return ExplainWithBackend("cudagraphs")
    except (ImportError, AttributeError):  # the reasons then come from torch._dynamo.utils.graph_break_reasons
        return "cudagraphs"


def split_points(reasons: Any) -> list[SplitPoint]:
    """The user lines where dynamo broke the step, innermost user frame of each break's stack, deduplicated."""
    from cgtool.script.frames import is_user_file, make_frame

    if reasons is None:
        try:
            from torch._dynamo.utils import graph_break_reasons as reasons
        except ImportError:
            return []
    points: dict[tuple[Any, ...], SplitPoint] = {}
    for r in reasons or []:
        text = str(getattr(r, "reason", r)).strip().splitlines()
        stack = list(getattr(r, "user_stack", None) or [])
        frame = None
        for fs in reversed(stack):
            if is_user_file(fs.filename):
                frame = make_frame(fs.filename, fs.lineno or 0, fs.name)
                break
        reason = text[0][:300] if text else "graph break"
        key = (frame.file, frame.line) if frame is not None else (reason,)
        points.setdefault(key, SplitPoint(reason, frame))
    return list(points.values())


@contextmanager
def kept_graphs(enabled: bool = True) -> Iterator[list[Any]]:
    """While active, every torch.cuda.CUDAGraph made keeps its graph; yields the list of those made ([] and no
    swap when not enabled).

    torch._C._CUDAGraph is a pybind11 class: its `__new__` ignores arguments and `__init__` builds the C++ object,
    and Python calls `__init__` with the caller's arguments (none, from cudagraph trees). So keep_graph=True must
    go to `__init__`; passing it to `__new__` alone (the first GPU run) left every graph unkept."""
    import torch

    made: list[Any] = []
    if not enabled:
        yield made
        return
    original = torch.cuda.CUDAGraph

    class KeptGraph(original):  # type: ignore[misc, valid-type]
        def __new__(cls, keep_graph: bool = False, *args: Any, **kwargs: Any) -> Any:
            try:
                graph = super().__new__(cls, True, *args, **kwargs)
            except TypeError:  # a torch without keep_graph: nothing to keep
                graph = super().__new__(cls, *args, **kwargs)
            made.append(graph)
            return graph

        def __init__(self, keep_graph: bool = False, *args: Any, **kwargs: Any) -> None:
            try:
                super().__init__(True, *args, **kwargs)
            except TypeError:  # a torch without keep_graph
                super().__init__(*args, **kwargs)

    patches = Patches()
    patches.set(torch.cuda, "CUDAGraph", KeptGraph)
    try:
        yield made
    finally:
        patches.undo_all()


def _has_graph(graph: Any) -> bool:
    try:
        graph.raw_cuda_graph()
        return True
    except Exception:  # not kept, never captured, or torch without raw_cuda_graph
        return False


@contextmanager
def skip_messages() -> Iterator[list[str]]:
    """The backend's "skipping cudagraphs due to …" messages while active (its artifact logger, heard directly)."""
    messages: list[str] = []
    logger = logging.getLogger(SKIP_LOGGER)

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage().strip().splitlines()[0][:300])

    handler = Keep(level=logging.WARNING)
    saved = (logger.level, logger.disabled, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.disabled, logger.propagate = False, False
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.level, logger.disabled, logger.propagate = saved
