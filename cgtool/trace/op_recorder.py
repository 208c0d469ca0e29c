"""What one op or call records: OpRecord fields, host tensors, Python numbers (an op's detail dict: aten_detail.py).

OpRecorder is the recording half of the Tracer (cgtool/trace/tracer.py): the modes call on_aten before an
aten op runs and on_call/after_call around a tensor call; its attributes are the state the modes share. Everything here runs per op: it builds no
strings, keeps no tensors alive (host tensors are known by weak reference) and caches per function.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Callable

import torch

from cgtool.model.trace import ATEN, Iteration, OpRecord, Trace
from cgtool.trace import op_roles as R
from cgtool.trace.aten_detail import AtenDetail
from cgtool.trace.call_recorder import CallRecorder
from cgtool.trace.tensor_args import device_name, dtype_name, recall, remember, tensor_args, tensors_in
from cgtool.trace.frame_table import SKIPPED, FrameTable, caller_frame
from cgtool.trace.sync_conditions import describe, features, matching_clause
from cgtool.trace.sync_table import SyncTable, load_table
from cgtool.trace.unseen_origin import UnseenOrigin

Tensor = torch.Tensor
# Which stream an op runs on: (stream id, capturing) for a device index; None where CUDA is absent.
StreamProbe = Callable[[int], "tuple[int | None, bool | None]"]

# detail keys that make an aten op a sync finding (cgtool/checks/sync.py)
_SYNC_KEYS = frozenset({"sync_when", "bool_index", "data_dependent", "via"})


class OpRecorder(CallRecorder, AtenDetail):
    """Recording state and the per-op logic. `virtual_cuda`: CPU tensors stand for CUDA tensors, and only
    tensors made on the host on purpose count as host tensors (the CPU run)."""

    def __init__(self, trace: Trace, virtual_cuda: bool, probe: StreamProbe | None,
                 call: Callable[[Any, tuple, dict], Any] | None) -> None:
        self.trace = trace
        self.virtual_cuda = virtual_cuda
        self.probe = probe
        self.node_count: Callable[[], int] | None = None  # nodes of the graph being captured (GPU run), -1 unknown
        self.run_call = call  # runs a user's call (the CPU stand-ins send CUDA devices to the CPU); None: as is
        self.frame_table = FrameTable(trace.frames)
        from cgtool.script.contract import Script

        # A harness may make a step's inputs inside its iteration: those ops are not the step's.
        self.frame_table.skip_codes = frozenset({Script.call_inputs.__code__, Script.call_setup.__code__})
        self.ops: list[OpRecord] | None = None  # the current iteration's ops, None when not recording
        self.current: Iteration | None = None  # the iteration being recorded
        self.iteration_index = -1
        self.phase = "setup"  # where host tensors made now come from: setup, inputs, step
        self.mute = 0  # >0 inside calls whose inner aten ops are noise (print), or the tracer's own calls
        self.call_host: bool | None = None  # side of the call in flight, for aten factories with no tensor args
        self.host_tensors: dict[int, tuple[weakref.ref, str, bool]] = {}  # id -> (ref, origin phase, pinned)
        self.host_devices: dict[int, torch.device] = {}  # id -> `.device` read from a host tensor (CPU run)
        self.main_thread = threading.get_ident()
        self.backward_frames = (-1, -1)  # user frame of the last .backward(): frames of engine-thread ops
        self.aten_names: dict[Any, tuple[str, bool]] = {}
        self.call_names: dict[Any, str] = {}
        self.call_kinds: dict[Any, tuple[str, int]] = {}
        self.meta_cache: dict[tuple, tuple[tuple[str, ...], tuple[str, ...], int]] = {}
        # The CPU run judges aten ops by the sync table generated on a GPU (cgtool/trace/sync_table.py):
        # per OpOverload, the clauses under which it syncs on CUDA, None when it never does. The GPU run keeps the
        # table's word as `table_sync` only, no finding by itself: it names the sync when a capture fails there.
        self.sync_table: SyncTable | None = load_table(torch.__version__)
        self.sync_key = "sync_when" if virtual_cuda else "table_sync"
        self.sync_when: dict[Any, list[list[str]] | None] = {}
        self.outer_call: tuple[str, tuple, dict] | None = None  # the Python-level call in flight (name, args, kwargs)
        self.origin: str | None = None  # where a host tensor made by the call in flight comes from, if not _phase
        self.sized_by_call: dict[str, Any] | None = None  # detail of a call with numbers awaiting its output
        self.sized_by_data: dict[str, Any] | None = None  # detail of a data-sized op awaiting its output
        self.broken = False  # a tracer failure: forward everything untouched from now on
        # State tensors rebound in the previous iteration (StateWatch, cgtool/trace/state_watch.py): id ->
        # (weakref, path); while any is watched, the paths whose old tensor an op reads, and which op made each
        # tensor (id -> index into the iteration's ops). Empty, as almost always, costs one test per op.
        self.watched: dict[int, tuple[weakref.ref, str]] = {}
        self.read_paths: set[str] = set()
        self.made: dict[int, int] = {}
        # a list of setup's grew in the previous iteration (StateWatch): note which op makes what, as above
        self.watch_made = False
        # Tensors of setup's state and inputs that the CPU run never saw made (trace/unseen_origin.py): a sync found
        # on them is a warning; `unsure_out` is the path an aten op in flight passes on to its outputs.
        self.unseen = UnseenOrigin() if virtual_cuda else None
        self.unsure_out: str | None = None

    def fail(self, exc: BaseException) -> None:
        if self.trace.tracer_error is None:
            self.trace.tracer_error = f"{type(exc).__name__}: {exc}"
        self.ops = None  # stop recording; the modes keep forwarding ops untouched
        self.broken = True

    def where(self, depth: int) -> tuple[int, int]:
        where = self.frame_table.locate(caller_frame(depth + 1))
        if where[0] < 0 and threading.get_ident() != self.main_thread:
            return self.backward_frames  # autograd engine thread (GPU backward): blame the .backward() line
        return where

    def host_info(self, t: Tensor) -> tuple[str, bool] | None:
        entry = recall(self.host_tensors, t)
        return (entry[1], entry[2]) if entry is not None else None

    def is_host(self, t: Tensor) -> bool:
        if not self.virtual_cuda:
            return not t.is_cuda
        return recall(self.host_tensors, t) is not None

    def tag(self, value: Any, pinned: bool, origin: str | None = None) -> None:
        origin = origin or self.origin or self.phase
        for t in tensors_in(value):
            remember(self.host_tensors, t, origin, pinned)

    def untag(self, value: Any) -> None:
        if isinstance(value, Tensor):
            self.host_tensors.pop(id(value), None)

    def side(self, device: Any) -> str | None:
        """"host" or "device" for a device argument; None when it names neither."""
        if device is None:
            return None
        if isinstance(device, str):
            kind = device.split(":", 1)[0]
        elif isinstance(device, torch.device):
            kind = device.type
            if kind == "cpu" and self.virtual_cuda:
                # a host tensor's `.device` is the host; any other torch.device("cpu") stands for the GPU (a
                # device tensor's `.device`, or the device a test harness passes in)
                return "host" if self.host_devices.get(id(device)) is device else "device"
        elif isinstance(device, int) and not isinstance(device, bool):
            kind = "cuda"
        else:
            return None
        return "device" if kind == "cuda" else "host" if kind == "cpu" else None

    # ---- aten ops --------------------------------------------------------------------------------
    def on_aten(self, func: Any, args: tuple, kwargs: dict) -> bool:
        """Record one aten op; True when its outputs are host tensors to tag (CPU run)."""
        self.sized_by_data = None
        self.unsure_out = None
        info = self.aten_names.get(func)
        if info is None:
            name = R.aten_packet(func)
            notable = (name in R.SCALAR_READ_ATEN or name in R.DATA_DEPENDENT_ATEN or name in R.INDEX_ATEN
                       or name in R.COPY_ATEN or name == R.REPEAT_ATEN)
            info = self.aten_names[func] = (name, notable)
        name, notable = info
        tensors = tensor_args(args, kwargs)
        if self.watched:
            self.note_reads(tensors)
        shapes = tuple([tuple(t.shape) for t in tensors])  # plain tuples of ints: the GC can untrack them
        key = (tuple([t.dtype for t in tensors]), tuple([t.get_device() for t in tensors]))
        meta = self.meta_cache.get(key)
        if meta is None:  # (dtype names, device names, first device index) per combination, interned
            index = next((d for d in key[1] if d >= 0), -1)
            meta = self.meta_cache[key] = (tuple([dtype_name(t.dtype) for t in tensors]),
                                      tuple([device_name(t) for t in tensors]), index)
        dtypes, devices, index = meta
        if self.virtual_cuda:
            if self.call_host or not tensors:
                host = bool(self.call_host)  # inside a host-only call (or a factory of one)
            else:
                host = bool(self.host_tensors) and all(self.is_host(t) for t in tensors)
        else:
            host = index < 0
            if host and not tensors:
                host = self.side(kwargs.get("device")) != "device"
        stream = capturing = None
        node = -1
        if not host and self.probe is not None:
            stream, capturing = self.probe(max(index, 0))
            if capturing and self.node_count is not None:
                node = self.node_count()
        try:
            above = sys._getframe(2)  # above this frame and the dispatch mode's
        except ValueError:  # the autograd engine's thread calls the mode straight from C++: nothing above it
            above = None
        inner, outer = self.frame_table.locate(above)
        if inner < 0 and threading.get_ident() != self.main_thread:
            inner, outer = self.backward_frames  # as _where: an autograd engine thread's op
        if inner == SKIPPED:
            return host and self.virtual_cuda
        if stream is not None and self.current is not None and self.current.stream is None and inner >= 0:
            self.current.stream = stream
        detail = None
        if notable or "generator" in kwargs:
            detail = self.aten_detail(name, args, kwargs, tensors)
        if self.sync_table is not None and not host:
            detail = self.table_detail(func, args, kwargs, detail)
            if detail and _SYNC_KEYS & detail.keys() and self.outer_call is not None and self.virtual_cuda:
                self.note_gpu_clean(detail)
        if not host and self.unseen is not None and self.unseen.unsure and tensors:
            path = self.unsure_out = self.unseen.origin_of(tensors, self.is_host)
            if path is not None:
                detail = {**(detail or {}), "unsure": path}
        ops = self.ops
        if ops is not None:
            ops.append(OpRecord(ATEN, name, shapes, dtypes, devices, inner, outer, stream,
                                capturing, host, detail, self.frame_table.issuer, node))
            if detail is not None and ("via" in detail or "data_dependent" in detail):
                self.sized_by_data = detail  # its output shapes are filled in after it runs
        return host and self.virtual_cuda

    def table_detail(self, func: Any, args: tuple, kwargs: dict, detail: dict[str, Any] | None) -> dict[str, Any] | None:
        """Add `sync_when` (the table's clause that holds, in words) when the op syncs on CUDA with these arguments;
        a tensor counts as a device tensor unless it was made on the host (as the GPU would see it)."""
        table = self.sync_table
        assert table is not None
        try:
            conditions = self.sync_when[func]
        except KeyError:
            conditions = self.sync_when[func] = table.ops.get(str(func))
        if not conditions:
            return detail
        clause = matching_clause(conditions, features(func, args, kwargs, lambda t: not self.is_host(t)))
        if clause is None:
            return detail
        d = dict(detail or {})
        d[self.sync_key] = describe(clause)
        d["sync_table"] = table.label
        d.setdefault("via", self.frame_table.library_path(sys._getframe(1)))
        return d

    def note_gpu_clean(self, detail: dict[str, Any]) -> None:
        """A sync-looking op inside a Python-level call that the table saw run clean on CUDA with these arguments
        (one_hot checks its input on the host on CPU only): `gpu_clean` names the call, the checks skip the op."""
        assert self.sync_table is not None and self.outer_call is not None
        name, args, kwargs = self.outer_call
        if self.sync_table.call_is_clean(name, features(None, args, kwargs, lambda t: not self.is_host(t))):
            detail["gpu_clean"] = name

    def note_reads(self, tensors: list[Tensor]) -> None:
        for t in tensors:
            entry = recall(self.watched, t)
            if entry is not None:
                self.read_paths.add(entry[1])

    def note_made(self, out: Any, index: int) -> None:
        """The op at `index` of this iteration's ops made `out` (while state tensors are watched)."""
        for t in tensors_in(out):
            self.made[id(t)] = index
