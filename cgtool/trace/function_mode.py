"""The Tracer's TorchFunctionMode (cgtool/trace/tracer.py): each Python-level tensor call, by kind (call_recorder.py:
a property read, a call of no role of its own, a `.device` read, the rest), recorded or only watched for the host
tensors it makes (setup, inputs); SetupMode also notes what setup() and inputs() made (trace/unseen_origin.py)."""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from cgtool.trace import op_roles as R
from cgtool.trace.call_recorder import DEVICE_READ, FORWARD, PLAIN, SPECIAL

Tensor = torch.Tensor


def _run_and_note(t: Any, func: Any, args: tuple, kwargs: dict, kind: int) -> Any:
    """Run a `.device` read or a host watch's plain call, then note what it gives (note_device, derive_host)."""
    run = t.run_call
    out = func(*args, **kwargs) if run is None else run(func, args, kwargs)
    try:
        if kind == DEVICE_READ:
            t.note_device(args, out)
        else:
            t.derive_host(args, kwargs, out)
    except Exception as exc:  # noqa: BLE001 - a tracer bug must not reach the user's code
        t.fail(exc)
    return out


class FunctionMode(TorchFunctionMode):
    def __init__(self, tracer: Any) -> None:
        super().__init__()
        self.tracer = tracer

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        t = self.tracer
        run = t.run_call
        if t.mute or t.broken:
            return func(*args, **kwargs) if run is None else run(func, args, kwargs)
        try:
            name, kind = t.call_kinds.get(func) or t.call_kind(func)
            if t.sync_table is not None and name in t.sync_table.python_level:
                t.python_level_sync(name, args, kwargs)
            if kind == PLAIN and t.ops is not None:  # the common case: no role of its own in the checks
                host = t.plain_call(name, args, kwargs)
            elif kind == DEVICE_READ or (kind == PLAIN and t.host_tensors):
                pass  # a tensor's `.device`; a host watch's plain call (over host tensors: host tensors out)
            elif kind == FORWARD or (t.ops is None and name not in R.HOST_WATCH_CALLS):
                # a host watch only cares about creations and moves
                return func(*args, **kwargs) if run is None else run(func, args, kwargs)
            else:
                kind = SPECIAL
                host, target = t.on_call(name, args, kwargs)
                quiet = name in R.QUIET_CALLS
        except Exception as exc:  # noqa: BLE001 - a tracer bug must not reach the user's code
            t.fail(exc)
            return func(*args, **kwargs) if run is None else run(func, args, kwargs)
        if kind == DEVICE_READ or (kind == PLAIN and t.ops is None):
            return _run_and_note(t, func, args, kwargs, kind)
        if kind == PLAIN:
            t.outer_call = (name, args, kwargs)  # what the sync table's Python-level entries are about
            try:
                out = func(*args, **kwargs) if run is None else run(func, args, kwargs)
            finally:
                t.call_host = None
                t.outer_call = None
            if t.sized_by_call is not None:
                try:
                    if isinstance(out, Tensor):
                        t.sized_by_call["out_shape"] = tuple(out.shape)
                    t.sized_by_call = None
                except Exception as exc:  # noqa: BLE001
                    t.fail(exc)
            return out
        if quiet:
            t.mute += 1
        try:
            out = func(*args, **kwargs) if run is None else run(func, args, kwargs)
        finally:
            if quiet:
                t.mute -= 1
            t.call_host = None
        try:
            return t.after_call(name, args, kwargs, host, target, out)
        except Exception as exc:  # noqa: BLE001
            t.fail(exc)
            return out


class SetupMode(FunctionMode):
    """The function mode of setup() and inputs() on the CPU run: also notes every tensor a call returns (what the
    CPU run saw made; trace/unseen_origin.py). The step's mode stays without this extra work."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = super().__torch_function__(func, types, args, kwargs)
        self.tracer.unseen.note(out)
        return out
