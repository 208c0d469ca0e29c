"""Stand-ins for torch.cuda on a CPU-only build, so the CPU analysis runs scripts written for a GPU.

Inside `cuda_standins(record)`: streams, events, synchronize, device queries, `torch.Generator(device="cuda")`,
`.cuda()`, `device="cuda"`, pinned memory, GradScaler("cuda") and capturable optimizers work on CPU, and
every stream/event/sync call is reported to `record(kind, stream, target)` (Tracer.stream_event) so the
checks see forks, joins, switches to the default stream and synchronizations at the user's line.

The emulated capture: the step starts on stream CAPTURE_STREAM (as under torch.cuda.graph), the default
stream is DEFAULT_STREAM. Everything is restored on exit. Only the CPU analysis installs them (also for
`lint --cpu` on a machine with a GPU: that process then makes no real CUDA calls); the GPU run never does.
"""

from __future__ import annotations

import itertools
import sys
import types
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from cgtool.frames import is_user_file

DEFAULT_STREAM = 0
CAPTURE_STREAM = 1

Record = Callable[[str, "int | None", "int | None"], None]
_ACTIVE: CudaStandins | None = None


def _active() -> CudaStandins:
    if _ACTIVE is None:
        raise RuntimeError("cgtool's CUDA stand-in used outside cuda_standins()")
    return _ACTIVE


def _called_by_user(depth: int = 2) -> bool:
    return is_user_file(sys._getframe(depth).f_code.co_filename)


class Stream:
    """Stand-in for torch.cuda.Stream: an id, and the stream calls recorded."""

    def __init__(self, device: Any = None, priority: int = 0, _id: int | None = None, **_: Any) -> None:
        owner = _active()
        self.stream_id = self.cuda_stream = _id if _id is not None else next(owner._ids)
        self.priority = priority
        self.device_index = 0
        self.device_type = 1
        self.device = torch.device("cuda", 0)
        owner._streams.setdefault(self.stream_id, self)
        if _id is None:
            owner._record("create", self.stream_id, None)

    def wait_stream(self, stream: Stream) -> None:
        _active()._record("wait-stream", self.stream_id, stream.stream_id)

    def wait_event(self, event: Event) -> None:
        _active()._record("wait-event", self.stream_id, event.event_id)

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        _active()._record("sync-stream", self.stream_id, None)

    def query(self) -> bool:
        _active()._record("query-stream", self.stream_id, None)
        return True

    def __enter__(self) -> Stream:
        owner = _active()
        owner._stack.append(owner.current)
        owner._switch(self.stream_id)
        return self

    def __exit__(self, *exc: Any) -> None:
        owner = _active()
        owner.current = owner._stack.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return hash(("cgtool-stream", self.stream_id))

    def __repr__(self) -> str:
        return f"<cgtool stand-in torch.cuda.Stream id={self.stream_id}>"


class Event:
    """Stand-in for torch.cuda.Event."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.event_id = next(_active()._event_ids)
        self.enable_timing = enable_timing

    def record(self, stream: Stream | None = None) -> None:
        owner = _active()
        owner._record("record-event", stream.stream_id if stream is not None else owner.current, self.event_id)

    def wait(self, stream: Stream | None = None) -> None:
        owner = _active()
        owner._record("wait-event", stream.stream_id if stream is not None else owner.current, self.event_id)

    def synchronize(self) -> None:
        _active()._record("sync-event", None, self.event_id)

    def query(self) -> bool:
        _active()._record("query-event", None, self.event_id)
        return True

    def elapsed_time(self, end_event: Event) -> float:
        _active()._record("elapsed-time", None, end_event.event_id)
        return 0.0


class StreamContext:
    """Stand-in for torch.cuda.stream(s) / torch.cuda.StreamContext."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self.stream.__enter__()
        return self.stream

    def __exit__(self, *exc: Any) -> None:
        if self.stream is not None:
            self.stream.__exit__(*exc)


class _GeneratorMeta(type(torch.Generator)):  # type: ignore[misc]
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _REAL_GENERATOR)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _REAL_GENERATOR)


_REAL_GENERATOR = torch.Generator


class Generator(_REAL_GENERATOR, metaclass=_GeneratorMeta):  # type: ignore[misc]
    """torch.Generator that accepts device="cuda" (a CPU generator) and remembers the device asked for:
    "device" (cuda, or the torch.device the harness passed), or "host" (no device, or "cpu")."""

    def __new__(cls, device: Any = "cpu") -> Generator:
        return super().__new__(cls, device="cpu")

    def __init__(self, device: Any = "cpu") -> None:
        kind = device.type if isinstance(device, torch.device) else str(device).split(":")[0]
        self._cgtool_device = "host" if kind == "cpu" and not isinstance(device, torch.device) else "device"


def _is_cuda(device: Any) -> bool:
    if isinstance(device, str):
        return device.startswith("cuda")
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, int) and not isinstance(device, bool)


def run_on_cpu(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run a torch call with CUDA devices and pinned memory sent to the CPU (.cuda() is a no-op)."""
    tb = torch._C.TensorBase
    if func is tb.cuda:
        return args[0]
    if func is tb.pin_memory:
        return args[0].clone()
    if func is tb.to and any(_is_cuda(a) for a in args[1:]):
        args = tuple("cpu" if i and _is_cuda(a) else a for i, a in enumerate(args))
    if kwargs:
        device = kwargs.get("device")
        if device is not None and _is_cuda(device):
            kwargs = {**kwargs, "device": "cpu"}
        if kwargs.get("pin_memory"):
            kwargs = {**kwargs, "pin_memory": False}
    return func(*args, **kwargs)


class _CpuMode(TorchFunctionMode):
    """Applies run_on_cpu to every torch call (setup, inputs); a Tracer given `call=run_on_cpu` does it
    during traced iterations instead, with this mode paused, so each call pays for one mode only."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return run_on_cpu(func, args, kwargs or {})


class CudaStandins:
    """The installed stand-ins: which stream is current, and where calls are reported."""

    def __init__(self, record: Record | None = None) -> None:
        self.record = record
        self.current = CAPTURE_STREAM
        self._stack: list[int] = []
        self._ids = itertools.count(CAPTURE_STREAM + 1)
        self._event_ids = itertools.count(1)
        self._streams: dict[int, Stream] = {}
        self._saved: list[tuple[Any, str, Any]] = []
        self._mode: _CpuMode | None = None

    # the Tracer's stream probe: (stream id, capturing unknown)
    def probe(self, device_index: int = 0) -> tuple[int, None]:
        return self.current, None

    def paused(self) -> _Paused:
        """Context: the device-rewriting mode is off (a Tracer with call=run_on_cpu does its work)."""
        return _Paused(self)

    def begin_iteration(self) -> None:
        """Each iteration starts on the emulated capturing stream, as the capture will."""
        self.current = CAPTURE_STREAM
        self._stack.clear()

    def _record(self, kind: str, stream: int | None, target: int | None) -> None:
        if self.record is not None:
            self.record(kind, stream, target)

    def _switch(self, stream_id: int) -> None:
        self.current = stream_id
        self._record("switch", stream_id, None)

    def _stream(self, stream_id: int) -> Stream:
        return self._streams.get(stream_id) or Stream(_id=stream_id)

    # ---- install / restore -------------------------------------------------------------------
    def _set(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _MISSING) if isinstance(owner, type)
                            else getattr(owner, name, _MISSING)))
        setattr(owner, name, value)

    def __enter__(self) -> CudaStandins:
        global _ACTIVE
        if _ACTIVE is not None:
            raise RuntimeError("cgtool's CUDA stand-ins are already installed")
        _ACTIVE = self
        try:
            self._install()
            self._mode = _CpuMode()
            self._mode.__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        global _ACTIVE
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        while self._saved:
            owner, name, old = self._saved.pop()
            if old is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, old)
        _ACTIVE = None

    def _install(self) -> None:
        c = torch.cuda
        real_available, real_count = c.is_available, c.device_count

        def is_available() -> bool:
            return True if _called_by_user() else real_available()

        def device_count() -> int:
            return 1 if _called_by_user() else real_count()

        def synchronize(device: Any = None) -> None:
            self._record("sync-device", None, None)

        def set_stream(stream: Stream) -> None:
            if stream is not None:
                self._switch(stream.stream_id)

        props = types.SimpleNamespace(name="cgtool CPU stand-in", major=9, minor=0, total_memory=80 << 30,
                                      multi_processor_count=132, is_integrated=False)
        for name, value in {
            "is_available": is_available, "device_count": device_count,
            "Stream": Stream, "Event": Event, "StreamContext": StreamContext, "stream": StreamContext,
            "current_stream": lambda device=None: self._stream(self.current),
            "default_stream": lambda device=None: self._stream(DEFAULT_STREAM),
            "set_stream": set_stream, "synchronize": synchronize,
            "ExternalStream": lambda stream_ptr, device=None: Stream(),
            "is_current_stream_capturing": lambda: False,
            "current_device": lambda: 0, "set_device": lambda device: None, "init": lambda: None,
            "get_device_name": lambda device=None: props.name,
            "get_device_capability": lambda device=None: (props.major, props.minor),
            "get_device_properties": lambda device=None: props,
            "mem_get_info": lambda device=None: (props.total_memory, props.total_memory),
            "reset_peak_memory_stats": lambda device=None: None, "ipc_collect": lambda: None,
            "get_rng_state": lambda device="cuda": torch.get_rng_state(),
            "set_rng_state": lambda new_state, device="cuda": None,
            "default_generators": (torch.default_generator,),
        }.items():
            self._set(c, name, value)
        for name in ("range_push", "range_pop", "mark"):
            self._set(c.nvtx, name, lambda *a, **k: 0)
        self._set(c.nvtx, "range", _null_range)
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None:
            self._set(accelerator, "synchronize", synchronize)
        self._set(torch, "Generator", Generator)
        # record_stream's argument parser rejects a stand-in stream before any mode sees the call
        self._set(torch.Tensor, "record_stream", lambda tensor, stream: None)
        self._install_capturable_optimizers()
        self._install_grad_scaler()

    def _install_capturable_optimizers(self) -> None:
        """capturable=True optimizers assert a CUDA device; on the CPU run the CPU stands in for it."""
        import importlib

        importlib.import_module("torch.optim")  # loads the optimizer modules that hold the check
        real = getattr(sys.modules.get("torch.optim.optimizer"), "_get_capturable_supported_devices", None)
        if real is None:
            return

        def supported(supports_xla: bool = True) -> list[str]:
            return [*real(supports_xla), "cpu"]

        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("torch.optim") and \
                    getattr(module, "_get_capturable_supported_devices", None) is real:
                self._set(module, "_get_capturable_supported_devices", supported)

    def _install_grad_scaler(self) -> None:
        """GradScaler("cuda") disables itself without CUDA; on the CPU run it scales on the CPU instead."""
        scaler = torch.amp.GradScaler
        real_init = scaler.__init__

        def __init__(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
            real_init(self, "cpu" if _is_cuda(device) else device, *args, **kwargs)

        self._set(scaler, "__init__", __init__)


class _Paused:
    def __init__(self, owner: CudaStandins) -> None:
        self.owner = owner

    def __enter__(self) -> None:
        if self.owner._mode is not None:
            self.owner._mode.__exit__(None, None, None)

    def __exit__(self, *exc: Any) -> None:
        if self.owner._mode is not None:
            self.owner._mode.__enter__()


class _Missing:
    pass


_MISSING = _Missing()


class _null_range:  # noqa: N801 - stands in for torch.cuda.nvtx.range
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def cuda_standins(record: Record | None = None) -> CudaStandins:
    """Context manager: install the stand-ins (CPU-only builds), reporting stream calls to `record`."""
    return CudaStandins(record)


__all__ = ["CAPTURE_STREAM", "DEFAULT_STREAM", "CudaStandins", "Event", "Generator", "Stream", "cuda_standins",
           "run_on_cpu"]
