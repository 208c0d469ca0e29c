"""The stand-in objects for torch.cuda on a CPU-only build (streams, events, stream contexts, a CUDA
generator) and `run_on_cpu`; cgtool/cuda_standins.py installs them and records their calls.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from cgtool.frames import is_user_file

if TYPE_CHECKING:
    from cgtool.cuda_standins import CudaStandins

DEFAULT_STREAM = 0
CAPTURE_STREAM = 1

Record = Callable[[str, "int | None", "int | None"], None]
_ACTIVE: list[CudaStandins | None] = [None]  # the installed stand-ins (one at a time)


def _active() -> CudaStandins:
    if _ACTIVE[0] is None:
        raise RuntimeError("cgtool's CUDA stand-in used outside cuda_standins()")
    return _ACTIVE[0]


def set_active(owner: CudaStandins | None) -> None:
    if owner is not None and _ACTIVE[0] is not None:
        raise RuntimeError("cgtool's CUDA stand-ins are already installed")
    _ACTIVE[0] = owner


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
