"""Tracer: records a Trace through TorchDispatchMode (every aten op) and TorchFunctionMode (tensor calls).

Usage (a harness):
    tracer = Tracer()                      # Tracer(virtual_cuda=True, stream_probe=...) on the CPU run
    with tracer:
        with tracer.host_watch("setup"):   # optional: learn which tensors the user makes on the host
            session.setup()                # a ScriptSession (cgtool/script/session.py)
        for i in range(warmup):
            with tracer.iteration(i, inputs=args):
                session.call(args)
    trace = tracer.trace

Robustness: recording runs in try/except; a failure switches recording off (Trace.tracer_error) and the
user's op runs exactly as it would without the tracer. Ops are recorded before they run, so when an op
raises (a failed capture) the last record and its frame name the culprit.
"""

from __future__ import annotations

import gc
import sys
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from cgtool.trace.function_mode import FunctionMode, SetupMode
from cgtool.trace.host_factories import HostFactories
from cgtool.trace.op_recorder import OpRecorder, StreamProbe
from cgtool.trace.state_watch import StateWatch
from cgtool.trace.tensor_args import tensors_in
from cgtool.trace.sync_warnings import sync_warnings_start, sync_warnings_stop

Tensor = torch.Tensor
from cgtool.model.frame import Frame
from cgtool.model.trace import Iteration, StreamEvent, Trace


def cuda_stream_probe() -> StreamProbe | None:
    """The real probe on a CUDA build: current stream id and is-capturing, per device index."""
    if not torch.cuda.is_available():
        return None
    get = getattr(torch._C, "_cuda_getCurrentStream", None)
    capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)

    def probe(index: int) -> tuple[int | None, bool | None]:
        sid = get(index)[0] if get is not None else torch.cuda.current_stream(index).stream_id
        return sid, (bool(capturing()) if capturing is not None else torch.cuda.is_current_stream_capturing())

    return probe


class Tracer(OpRecorder):
    """Records a Trace. `virtual_cuda=True` on the CPU run: CPU tensors stand for CUDA tensors, and only
    tensors the user makes on the host on purpose (no device, device="cpu", .cpu()) count as host tensors.
    `stream_probe(device_index)` gives (stream id, capturing) per device op; by default the real CUDA one.
    `call(func, args, kwargs)` runs each tensor call (the CPU stand-ins' run_on_cpu); by default as is.
    `sync_debug=True` (GPU run) also records torch.cuda.set_sync_debug_mode("warn") warnings as SYNC_WARNING
    records (off by default: cgtool.pipeline.gpu_analysis hooks the warnings itself). While a CUDA stream
    captures, each aten op also records the node count of the graph being captured (OpRecord.node), which
    tells which nodes it made (cgtool/model/node_profile.py)."""

    def __init__(self, *, virtual_cuda: bool = False, stream_probe: StreamProbe | None = None,
                 sync_debug: bool = False, device: str | None = None,
                 call: Callable[[Any, tuple, dict], Any] | None = None) -> None:
        cuda = (not virtual_cuda) and torch.cuda.is_available()
        probe = stream_probe if stream_probe is not None else (cuda_stream_probe() if cuda else None)
        super().__init__(Trace(device=device or ("cuda:0" if cuda else "cpu"), virtual_cuda=virtual_cuda),
                         virtual_cuda, probe, call)
        self.sync_debug = sync_debug and cuda
        if cuda and stream_probe is None:
            from cgtool.trace.node_counter import capture_node_counter

            self.node_count = capture_node_counter()
        self.modes: list[Any] = []
        self.saved_sync_mode: Any = None
        self.saved_showwarning: Any = None
        self.state_watch = StateWatch(self)  # RNG reseeds and rebound state tensors (cgtool/trace/state_watch.py)
        self.host_factories = HostFactories() if virtual_cuda else None  # from_numpy & co. (trace/host_factories.py)

    # ---- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Tracer:
        if torch.cuda.is_available() and not self.virtual_cuda:
            try:
                self.trace.default_stream = torch.cuda.default_stream().stream_id
            except Exception:  # noqa: BLE001 - stream ids are a nicety
                pass
        self.state_watch.install()
        if self.host_factories is not None:
            self.host_factories.install()
        return self

    def __exit__(self, *exc: Any) -> None:
        while self.modes:
            self.modes.pop().__exit__(None, None, None)
        self.state_watch.uninstall()
        if self.host_factories is not None:
            self.host_factories.uninstall()
        self.ops = None

    def iteration(self, index: int | str, phase: str | None = None, inputs: Any = None) -> _Phase:
        """Context: record one iteration of the step. `phase` is "warmup" (default) or "capture";
        iteration("capture") is short for the next index with phase "capture". `inputs` (an Args, dict or
        tuple) records the shapes of the step's tensor inputs."""
        if isinstance(index, str):
            phase, index = index, len(self.trace.iterations)
        return _Phase(self, index, phase or "warmup", inputs)

    def host_watch(self, phase: str) -> _Phase:
        """Context: record nothing, but learn which tensors are made on the host (setup, inputs)."""
        return _Phase(self, -1, phase, None, record=False)

    def mark_unseen(self, phase: str, value: Any) -> None:
        """Inside a host watch, with what setup() or inputs() returned (an Args): the tensors in it that no call
        was seen making (another thread's, a C extension's) become unsure (CPU run; trace/unseen_origin.py)."""
        if self.unseen is not None and value is not None:
            try:
                self.unseen.mark(phase, value, self.is_host)
            except Exception as exc:  # noqa: BLE001 - a tracer bug must not reach the user's code
                self.fail(exc)

    def last_user_frame(self) -> Frame | None:
        """The user frame of the last op recorded (a failed capture's culprit)."""
        for it in reversed(self.trace.iterations):
            for op in reversed(it.ops):
                if op.frame >= 0:
                    return self.trace.frames[op.frame]
        return None

    # ---- stream events (the CPU stand-ins and the GPU watcher call this) -------------------------
    def stream_event(self, kind: str, stream: int | None = None, target: int | None = None) -> None:
        try:
            inner, _ = self.frame_table.locate(sys._getframe(1))
            if inner < 0:
                return  # the harness's or torch's own call (torch.cuda.graph synchronizes), not the user's
            pos = len(self.ops) if self.ops is not None else 0
            if self.current is not None and self.current.stream is None and self.probe is not None:
                self.current.stream = self.probe(torch.cuda.current_device() if not self.virtual_cuda else 0)[0]
            self.trace.events.append(StreamEvent(self.iteration_index, pos, kind, stream, target, inner))
        except Exception as exc:  # noqa: BLE001 - never break the user's call
            self.fail(exc)

    # ---- internals -------------------------------------------------------------------------------
class _Phase:
    """Context of one iteration (recording) or one host-watch phase (setup, inputs)."""

    def __init__(self, tracer: Tracer, index: int, phase: str, inputs: Any, record: bool = True) -> None:
        self.tracer, self.index, self.phase, self.inputs, self.record = tracer, index, phase, inputs, record
        self.it: Iteration | None = None
        self._saved: tuple[Any, ...] = ()
        self._gc_was_enabled = True

    def __enter__(self) -> Iteration | None:
        t = self.tracer
        self._saved = (t.ops, t.iteration_index, t.phase, t.frame_table.anchor, t.current)
        t.frame_table.anchor = sys._getframe(1)
        if self.record:
            self.it = Iteration(self.index, self.phase, inputs=_input_shapes(self.inputs))
            t.trace.iterations.append(self.it)
            t.ops, t.iteration_index, t.phase, t.current = self.it.ops, self.index, "step", self.it
            if t.broken:
                t.ops = None  # recording was switched off by an earlier failure
        else:
            t.ops, t.iteration_index, t.phase = None, -1, self.phase
            if t.unseen is not None:
                t.unseen.start()
        fmode = SetupMode(t) if not self.record and t.unseen is not None else FunctionMode(t)
        fmode.__enter__()
        t.modes.append(fmode)
        self._gc_was_enabled = gc.isenabled()
        if self.record:
            t.state_watch.begin()
            gc.disable()  # collections would rescan the growing trace again and again; resumed on exit
            dmode = _DispatchMode(t)
            dmode.__enter__()
            t.modes.append(dmode)
            if t.sync_debug:
                sync_warnings_start(t)
        return self.it

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        t = self.tracer
        if self.record and t.sync_debug:
            sync_warnings_stop(t)
        for _ in range(2 if self.record else 1):
            t.modes.pop().__exit__(None, None, None)
        if self.record:
            t.state_watch.end()
        elif t.unseen is not None:
            t.unseen.stop()
        if self._gc_was_enabled:
            gc.enable()
        if self.it is not None and exc is not None:
            self.it.error = f"{type(exc).__name__}: {exc}"
        t.ops, t.iteration_index, t.phase, t.frame_table.anchor, t.current = self._saved
        t.frame_table.forget()


def _input_shapes(inputs: Any) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    if inputs is None:
        return out
    args = getattr(inputs, "args", inputs if isinstance(inputs, (list, tuple)) else ())
    kwargs = getattr(inputs, "kwargs", inputs if isinstance(inputs, dict) else {})
    for i, v in enumerate(args):
        if isinstance(v, Tensor):
            out[f"arg{i}"] = tuple(v.shape)
    for k, v in kwargs.items():
        if isinstance(v, Tensor):
            out[k] = tuple(v.shape)
    return out


class _DispatchMode(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # no torch._disable_dynamo wrapper around our handler: it costs ~2 us per op

    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self.tracer = tracer

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        t = self.tracer
        if t.ops is None or t.mute or t.broken:
            return func(*args, **kwargs)
        # while state tensors are watched, or a list of setup's grows: which op makes what
        made = len(t.ops) if t.watched or t.watch_made else -1
        try:
            tag = t.on_aten(func, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - a tracer bug must not reach the user's code
            t.fail(exc)
            tag = False
        out = func(*args, **kwargs)
        if made >= 0 and t.ops is not None and len(t.ops) > made:
            t.note_made(out, made)
        if tag or t.sized_by_data is not None or t.unsure_out is not None:
            try:
                if tag:
                    t.tag(out, pinned=False)
                if t.unsure_out is not None and t.unseen is not None:  # unsure_out is set only with `unseen`
                    t.unseen.tag(out, t.unsure_out)
                    t.unsure_out = None
                if t.sized_by_data is not None:
                    t.sized_by_data["out_shapes"] = tuple(tuple(o.shape) for o in tensors_in(out))
                    t.sized_by_data = None
            except Exception as exc:  # noqa: BLE001
                t.fail(exc)
        return out
