"""The Python-level half of OpRecorder (cgtool/trace/op_recorder.py): what a tensor call records (TorchFunctionMode),
which side it runs on, and which host tensors it makes or moves. Mixed into OpRecorder, whose state it uses.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from cgtool.model.trace import CALL, OpRecord
from cgtool.trace import op_roles as R
from cgtool.trace.frame_table import SKIPPED
from cgtool.trace.recorder_state import RecorderState
from cgtool.trace.sync_conditions import describe, features
from cgtool.trace.tensor_args import device_name, dtype_name, scan_call

Tensor = torch.Tensor
# Kinds of Python-level calls (per function, cached): property reads, calls with no role of their own in the
# checks (linear, relu, add: only their scalars and their side matter), the rest, and reads of `tensor.device`.
FORWARD, PLAIN, SPECIAL, DEVICE_READ = 0, 1, 2, 3
_DEVICE_ATTR = torch._C.TensorBase.device
_HOST_DEVICES_KEPT = 4096  # the most torch.device objects of host tensors remembered (the oldest go first)
_SPECIAL_NAMES = (R.ALWAYS_RECORDED_CALLS | R.QUIET_CALLS | R.HOST_WATCH_CALLS | R.MOVE_CALLS | R.FACTORY_CALLS
                  | {"Tensor.to", "Tensor.cuda", "Tensor.cpu", "Tensor.pin_memory"})


class CallRecorder(RecorderState):
    """Tensor calls: _on_call before one runs, _after_call after (see OpRecorder for the state)."""

    # ---- Python-level calls ----------------------------------------------------------------------
    def call_name(self, func: Any) -> str:
        name = self.call_names.get(func)
        if name is None:
            name = self.call_names[func] = R.call_name(func)
        return name

    def call_kind(self, func: Any) -> tuple[str, int]:
        name = self.call_name(func)
        if name == "Tensor.<property>":
            kind = DEVICE_READ if getattr(func, "__self__", None) is _DEVICE_ATTR else FORWARD
        else:
            kind = SPECIAL if name in _SPECIAL_NAMES else PLAIN
        info = self.call_kinds[func] = (name, kind)
        return info

    def plain_call(self, name: str, args: tuple, kwargs: dict) -> bool:
        """_on_call for a call of no role of its own (not a factory, move, read, backward): its side only,
        unless it has Python numbers on the device or a generator (then _on_call records it)."""
        self.sized_by_call = None
        self.origin = None
        tensors, numbers = scan_call(args, kwargs)
        dev_arg = kwargs.get("device") if kwargs else None
        side = None if dev_arg is None else self.side(dev_arg)
        if side is not None:
            host = side == "host"
        elif not tensors:
            host = True
        elif self.virtual_cuda:
            host = all(self.is_host(t) for t in tensors)
        else:
            host = True
            for t in tensors:
                if t.is_cuda:
                    host = False
                    break
        self.call_host = host
        if (numbers and not host) or (kwargs and kwargs.get("generator") is not None):
            return self.on_call(name, args, kwargs)[0]  # recorded: the general path
        return host

    def note_device(self, args: tuple, out: Any) -> None:
        """After `tensor.device`: on the CPU run a host tensor's device is remembered (by identity: every read
        makes a new torch.device), so that side() tells it from a device tensor's `cpu`, which stands for the GPU."""
        if self.virtual_cuda and args and isinstance(args[0], Tensor) and isinstance(out, torch.device) \
                and self.is_host(args[0]):
            kept = self.host_devices
            kept[id(out)] = out
            if len(kept) > _HOST_DEVICES_KEPT:
                del kept[next(iter(kept))]

    def derive_host(self, args: tuple, kwargs: dict, out: Any) -> None:
        """After a plain call in a host watch (setup, inputs): a call over host tensors only, with no device,
        makes host tensors (stack, view, arithmetic), as on a GPU. A pinned source leaves the output untagged
        (a view of pinned memory is pinned, a new tensor is not: neither is taken for pageable memory)."""
        tensors, _ = scan_call(args, kwargs)
        if not tensors:
            return
        dev_arg = kwargs.get("device") if kwargs else None
        if dev_arg is not None and self.side(dev_arg) != "host":
            return
        for t in tensors:
            info = self.host_info(t)
            if info is None or info[1]:
                return
        self.tag(out, pinned=False, origin=self.phase)

    def on_call(self, name: str, args: tuple, kwargs: dict) -> tuple[bool, str | None]:
        """Record a call before it runs. Returns (host side, target side of a move) for _after_call."""
        self.sized_by_call = None
        self.origin = None
        tensors, numbers = scan_call(args, kwargs)
        dev_arg = kwargs.get("device") if kwargs else None
        host = self.call_side(name, tensors, dev_arg)
        target = None
        if name == "Tensor.to":
            target = self.to_target(args[1:], kwargs)
        elif name == "Tensor.cuda":
            target = "device"
        self.call_host = host and target != "device"
        if self.ops is None:
            return host, target
        gen = kwargs.get("generator") if kwargs else None
        always = name in R.ALWAYS_RECORDED_CALLS
        if not (always or gen is not None or (numbers and not host)):
            return host, target
        detail: dict[str, Any] = {}
        if gen is not None:
            detail.update(self.generator_detail(gen))
        if numbers and not host:
            detail["scalars"] = tuple(numbers)
        if always:
            self.call_detail(name, tensors, dev_arg, target, detail, args[0] if args else None)
        if not host and tensors and self.unseen is not None and self.unseen.unsure:
            path = self.unseen.origin_of(tensors, self.is_host)
            if path is not None:
                detail["unsure"] = path
        inner, outer = self.where(3)  # above this frame and the function mode's (both cgtool's)
        if inner == SKIPPED:
            self.origin = "inputs"
            return host, target
        if name in R.BACKWARD_CALLS:
            self.backward_frames = (inner, outer)
        self.ops.append(OpRecord(CALL, name, tuple(tuple(t.shape) for t in tensors),
                                  tuple(dtype_name(t.dtype) for t in tensors),
                                  tuple(device_name(t) for t in tensors), inner, outer, None, None, host,
                                  detail or None, self.frame_table.issuer))
        if "scalars" in detail:
            self.sized_by_call = detail  # _after_call adds the output shape: a size or a value changed?
        return host, target

    def python_level_sync(self, name: str, args: tuple, kwargs: dict) -> None:
        """Record a call that the sync table saw synchronize outside any aten op on CUDA with these
        arguments (`unravel_index` copies its shape to the device, indexing with a 0-dim device tensor reads it
        on the host): a CALL record whose detail has `sync_when` and `python_level`."""
        table = self.sync_table
        if table is None or self.ops is None or name not in table.python_level or name in R.DATA_FACTORY_CALLS:
            return  # torch.tensor(data, device=...) inside torch.masked.*: CG402 names that copy already
        tensors, _ = scan_call(args, kwargs)
        if self.call_side(name, tensors, kwargs.get("device") if kwargs else None):
            return  # host tensors only: no device, nothing to wait for
        clause = table.python_level_sync(name, features(None, args, kwargs, lambda t: not self.is_host(t)))
        if clause is None:
            return
        inner, outer = self.where(3)  # above this frame and the function mode's (both cgtool's)
        if inner == SKIPPED:
            return
        detail: dict[str, Any] = {self.sync_key: describe(clause), "via": self.frame_table.library_path(sys._getframe(1)),
                  "sync_table": table.label}
        if self.virtual_cuda:
            detail["python_level"] = True  # a finding on the CPU run; on the GPU run it names a failed capture
        self.ops.append(OpRecord(CALL, name, tuple(tuple(t.shape) for t in tensors),
                                 tuple(dtype_name(t.dtype) for t in tensors), tuple(device_name(t) for t in tensors),
                                 inner, outer, None, None, False, detail, self.frame_table.issuer))

    def call_side(self, name: str, tensors: list[Tensor], dev_arg: Any) -> bool:
        """True when the call works on the host only (no device tensor in, no device out)."""
        side = self.side(dev_arg)
        if side is not None and name not in R.MOVE_CALLS:
            return side == "host"
        if name in R.FACTORY_CALLS and name != "Tensor.new_tensor":
            return True  # a factory with no device makes a host tensor
        if not tensors:
            return True
        for t in tensors:
            if not self.is_host(t):
                return False
        return True

    def call_detail(self, name: str, tensors: list[Tensor], dev_arg: Any, target: str | None,
                     d: dict[str, Any], data: Any = None) -> None:
        src = tensors[0] if tensors else None
        if name in R.SCALAR_READ_CALLS or name in R.TO_HOST_CALLS:
            via = self.frame_table.library_path(sys._getframe(1))
            method = ":" + name.rsplit(".", 1)[-1]
            while via and via[-1].endswith(method):  # the Python body of the called method itself
                via = via[:-1]
            d["via"] = via
            return
        if name in R.DATA_FACTORY_CALLS:
            if name == "Tensor.new_tensor":
                target = "host" if src is not None and self.is_host(src) else "device"
            else:
                target = self.side(dev_arg)
            # no data, no copy: torch.tensor([], device="cuda") (transformers' DynamicLayer) copies nothing, so
            # nothing is captured or reused; on a GPU it captures and replays as it runs eagerly
            if target == "device" and not (src is not None and not self.is_host(src)) and not _empty_data(data):
                d.update(move="h2d", src="step", pinned=False)
            return
        if name == "Tensor.copy_" and len(tensors) >= 2:
            target = "host" if self.is_host(tensors[0]) else "device"
            src = tensors[1]
        elif name not in ("Tensor.to", "Tensor.cuda") or src is None:
            return
        src_host = self.is_host(src)
        if src_host and target == "device":
            origin = self.host_info(src)
            pinned = origin[1] if origin is not None and self.virtual_cuda else self.pinned(src)
            d.update(move="h2d", src=origin[0] if origin else "unknown", pinned=pinned)
        elif not src_host and target == "host":
            d.update(move="d2h", via=self.frame_table.library_path(sys._getframe(1)))

    def to_target(self, rest: tuple, kwargs: dict) -> str | None:
        side = self.side(kwargs.get("device")) if kwargs else None
        for a in rest:
            if side is not None:
                break
            if isinstance(a, Tensor):
                side = "host" if self.is_host(a) else "device"
            elif not isinstance(a, torch.dtype):
                side = self.side(a)
        return side

    def pinned(self, t: Tensor) -> bool:
        self.mute += 1
        try:
            return bool(t.is_pinned())
        except Exception:  # noqa: BLE001
            return False
        finally:
            self.mute -= 1

    def after_call(self, name: str, args: tuple, kwargs: dict, host: bool, target: str | None, out: Any) -> Any:
        """Learn host tensors (factories with no device, .cpu(), pinning); a move to the device un-learns.
        On the CPU run a move that returned its own input returns an alias instead, so that the host and
        the device copy are distinct objects as on a GPU (same storage, same values)."""
        if self.sized_by_call is not None:
            if isinstance(out, Tensor):
                self.sized_by_call["out_shape"] = tuple(out.shape)
            self.sized_by_call = None
        src = args[0] if args and isinstance(args[0], Tensor) else None
        if name in R.FACTORY_CALLS and name != "Tensor.new_tensor":
            if host:
                self.tag(out, pinned=bool(kwargs.get("pin_memory")))
            elif self.virtual_cuda and out is src and src is not None and self.is_host(src):
                # torch.as_tensor(host_tensor, device=cuda) copies on a GPU; on the CPU it returns its input
                # (ASGD's eta from a tensor lr): a copy, so the device tensor is not taken for the host one
                out = self.copy_of(src)
        elif name == "Tensor.pin_memory":
            self.tag(out, pinned=True)
        elif name == "Tensor.cpu" or target == "host":
            if self.virtual_cuda and out is src and src is not None and not self.is_host(src):
                out = self.alias(src)
            self.tag(out, pinned=False)
        elif target == "device":
            if self.virtual_cuda and out is src and src is not None and self.is_host(src):
                out = self.alias(src)
            self.untag(out)
        return out

    def copy_of(self, t: Tensor) -> Tensor:
        self.mute += 1
        try:
            return t.clone()
        finally:
            self.mute -= 1

    def alias(self, t: Tensor) -> Tensor:
        self.mute += 1
        try:
            return t.view_as(t)
        except Exception:  # noqa: BLE001 - tensors that cannot alias keep their identity
            return t
        finally:
            self.mute -= 1



def _empty_data(data: Any) -> bool:
    """True for Python data with no elements (`[]`, `[[], []]`, `()`): a factory over it copies no bytes."""
    if isinstance(data, (list, tuple)):
        return all(_empty_data(x) for x in data)
    return False
