"""The stand-in objects for torch.cuda on a CPU-only build (streams, events, stream contexts, a CUDA
generator), the stream state they act on (StandinStreams), and `run_on_cpu`; cgtool/trace/standins.py
installs them and records their calls.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from cgtool.model.trace import RecordStreamEvent
from cgtool.script.frames import CGTOOL_DIR

DEFAULT_STREAM = 0
CAPTURE_STREAM = 1



class StandinStreams:
    """The emulated streams: which one is current, the stream contexts entered, ids, and where calls are
    reported (`record(kind, stream, target)`, normally Tracer.stream_event)."""

    def __init__(self, record: RecordStreamEvent | None = None) -> None:
        self.record = record
        self.current = CAPTURE_STREAM
        self.stack: list[int] = []
        self.stream_ids = itertools.count(CAPTURE_STREAM + 1)
        self.event_ids = itertools.count(1)
        self.streams: dict[int, Stream] = {}
        self.capturing = False  # the emulated capture iteration is under way

    def probe(self, device_index: int = 0) -> tuple[int, None]:
        """The Tracer's stream probe: (stream id, capturing unknown)."""
        return self.current, None

    def begin_iteration(self, capturing: bool = False) -> None:
        """Each iteration starts on the emulated capturing stream, as the capture will; `capturing` marks the
        emulated capture itself (torch.cuda.is_current_stream_capturing() answers True to the script)."""
        self.current = CAPTURE_STREAM
        self.stack.clear()
        self.capturing = capturing

    def report(self, kind: str, stream: int | None, target: int | None) -> None:
        if self.record is not None:
            self.record(kind, stream, target)

    def switch(self, stream_id: int) -> None:
        self.current = stream_id
        self.report("switch", stream_id, None)

    def stream(self, stream_id: int) -> Stream:
        return self.streams.get(stream_id) or Stream(_id=stream_id)


_ACTIVE: list[StandinStreams | None] = [None]  # the installed stand-ins (one at a time)


def active() -> StandinStreams:
    if _ACTIVE[0] is None:
        raise RuntimeError("cgtool's CUDA stand-in used outside cuda_standins()")
    return _ACTIVE[0]


def set_active(owner: StandinStreams | None) -> None:
    if owner is not None and _ACTIVE[0] is not None:
        raise RuntimeError("cgtool's CUDA stand-ins are already installed")
    _ACTIVE[0] = owner


# torch's and cgtool's own package folders (not any path with a folder named "torch": a venv in /opt/torch/
# holds transformers too, which must get a GPU machine's answers)
TORCH_DIR = os.path.abspath(os.path.dirname(torch.__file__)).replace("\\", "/").rstrip("/") + "/"
TORCH_AND_CGTOOL = (TORCH_DIR, os.path.abspath(CGTOOL_DIR).replace("\\", "/").rstrip("/") + "/")


def called_outside_torch(depth: int = 2) -> bool:
    """True when the caller is the user's code or a library of theirs (transformers, timm, ...), not torch
    itself or cgtool: they get the answers a GPU machine gives; torch's internals keep the CPU's."""
    path = sys._getframe(depth).f_code.co_filename
    if path.startswith("<"):
        return False
    return not os.path.abspath(path).replace("\\", "/").startswith(TORCH_AND_CGTOOL)


class Stream:
    """Stand-in for torch.cuda.Stream: an id, and the stream calls recorded."""

    def __init__(self, device: Any = None, priority: int = 0, _id: int | None = None, **_: Any) -> None:
        owner = active()
        self.stream_id = self.cuda_stream = _id if _id is not None else next(owner.stream_ids)
        self.priority = priority
        self.device_index = 0
        self.device_type = 1
        self.device = torch.device("cuda", 0)
        owner.streams.setdefault(self.stream_id, self)
        if _id is None:
            owner.report("create", self.stream_id, None)

    def wait_stream(self, stream: Stream) -> None:
        active().report("wait-stream", self.stream_id, stream.stream_id)

    def wait_event(self, event: Event) -> None:
        active().report("wait-event", self.stream_id, event.event_id)

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        active().report("sync-stream", self.stream_id, None)

    def query(self) -> bool:
        active().report("query-stream", self.stream_id, None)
        return True

    def __enter__(self) -> Stream:
        owner = active()
        owner.stack.append(owner.current)
        owner.switch(self.stream_id)
        return self

    def __exit__(self, *exc: Any) -> None:
        owner = active()
        owner.current = owner.stack.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return hash(("cgtool-stream", self.stream_id))

    def __repr__(self) -> str:
        return f"<cgtool stand-in torch.cuda.Stream id={self.stream_id}>"


class Event:
    """Stand-in for torch.cuda.Event."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.event_id = next(active().event_ids)
        self.enable_timing = enable_timing

    def record(self, stream: Stream | None = None) -> None:
        owner = active()
        owner.report("record-event", stream.stream_id if stream is not None else owner.current, self.event_id)

    def wait(self, stream: Stream | None = None) -> None:
        owner = active()
        owner.report("wait-event", stream.stream_id if stream is not None else owner.current, self.event_id)

    def synchronize(self) -> None:
        active().report("sync-event", None, self.event_id)

    def query(self) -> bool:
        active().report("query-event", None, self.event_id)
        return True

    def elapsed_time(self, end_event: Event) -> float:
        active().report("elapsed-time", None, end_event.event_id)
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


class Generator(_REAL_GENERATOR, metaclass=_GeneratorMeta):
    """torch.Generator that accepts device="cuda" (a CPU generator) and remembers the device asked for:
    "device" (cuda, or the torch.device the harness passed), or "host" (no device, or "cpu")."""

    def __new__(cls, device: Any = "cpu") -> Generator:
        return super().__new__(cls, device="cpu")  # type: ignore[call-arg]  # torch's stub declares only __init__

    def __init__(self, device: Any = "cpu") -> None:
        kind = device.type if isinstance(device, torch.device) else str(device).split(":")[0]
        self._cgtool_device = "host" if kind == "cpu" and not isinstance(device, torch.device) else "device"


def is_cuda_device(device: Any) -> bool:
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
    if func is tb.to and any(is_cuda_device(a) for a in args[1:]):
        args = tuple("cpu" if i and is_cuda_device(a) else a for i, a in enumerate(args))
    if kwargs:
        device = kwargs.get("device")
        if device is not None and is_cuda_device(device):
            kwargs = {**kwargs, "device": "cpu"}
        if kwargs.get("pin_memory"):
            kwargs = {**kwargs, "pin_memory": False}
    return func(*args, **kwargs)


class CpuMode(TorchFunctionMode):
    """Applies run_on_cpu to every torch call (setup, inputs); a Tracer given `call=run_on_cpu` does it
    during traced iterations instead, with this mode paused, so each call pays for one mode only."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return run_on_cpu(func, args, kwargs or {})
