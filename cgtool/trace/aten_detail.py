"""The detail dict of a notable aten op (OpRecord.detail): a generator and its device, histc with a given range,
the library path of a host read or a data-sized op, a boolean-mask index, a data-dependent repeat_interleave,
the direction of a host/device copy on the GPU run. Mixed into OpRecorder (cgtool/trace/op_recorder.py), whose
state (frame table, host tensors, virtual_cuda) it uses; `sys._getframe(1)` is on_aten's frame.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from cgtool.trace import op_roles as R
from cgtool.trace.recorder_state import RecorderState

Tensor = torch.Tensor


def _histc_range(args: tuple, kwargs: dict) -> bool:
    """aten.histc(self, bins=100, min=0, max=0): with min != max the range is given; with min == max it is
    taken from the data (CUDA reads the tensor's min and max on the host)."""
    lo = kwargs.get("min", args[2] if len(args) > 2 else 0)
    hi = kwargs.get("max", args[3] if len(args) > 3 else 0)
    return lo != hi


class AtenDetail(RecorderState):
    """The aten-op half of the detail dicts (see the module docstring)."""

    def aten_detail(self, name: str, args: tuple, kwargs: dict, tensors: list[Tensor]) -> dict[str, Any] | None:
        d: dict[str, Any] = {}
        gen = kwargs.get("generator")
        if gen is not None:
            d.update(self.generator_detail(gen))
        if name == R.HISTC_ATEN and (_histc_range(args, kwargs) or (tensors and tensors[0].numel() == 0)):
            d["fixed_size"] = True  # histc with a given range (or of no elements): `bins` outputs, no read of min/max
        elif name in R.SCALAR_READ_ATEN or name in R.DATA_DEPENDENT_ATEN:
            d["via"] = self.frame_table.library_path(sys._getframe(1))
        elif name in R.INDEX_ATEN:
            indices = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else ()
            if any(isinstance(i, Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices):
                d["bool_index"] = True
                d["via"] = self.frame_table.library_path(sys._getframe(1))
        elif name == R.REPEAT_ATEN:
            if tensors and kwargs.get("output_size") is None and isinstance(args[0] if args else None, Tensor) \
                    and (len(args) < 2 or isinstance(args[1], Tensor) or args[0].dim() == 1 and len(args) == 1):
                d["data_dependent"] = True
        elif name in R.COPY_ATEN and not self.virtual_cuda:
            self.copy_detail(d, name, args, kwargs)
        return d or None

    def copy_detail(self, d: dict[str, Any], name: str, args: tuple, kwargs: dict) -> None:
        """GPU run: the direction of an aten-level copy between host and device."""
        if name == "aten._to_copy" and args and isinstance(args[0], Tensor):
            src, dst_side = args[0], self.side(kwargs.get("device"))
            src_host = not src.is_cuda
        elif name in ("aten.copy_", "aten.copy") and len(args) > 1 and isinstance(args[1], Tensor):
            src, dst_side = args[1], ("host" if not args[0].is_cuda else "device")
            src_host = not src.is_cuda
        else:
            return
        if src_host and dst_side == "device":
            d["move"] = "h2d"
            self.mute += 1
            try:
                pinned = bool(src.is_pinned())
            finally:
                self.mute -= 1
            origin = self.host_info(src)
            d["src"] = origin[0] if origin else "unknown"
            d["pinned"] = pinned
        elif not src_host and dst_side == "host":
            d["move"] = "d2h"
            d["via"] = self.frame_table.library_path(sys._getframe(1))

    def generator_detail(self, gen: Any) -> dict[str, Any]:
        if gen is torch.default_generator or any(gen is g for g in getattr(torch.cuda, "default_generators", ())):
            return {"generator": "default"}
        intended = getattr(gen, "_cgtool_device", None)  # set by the CPU stand-in for torch.Generator
        if intended is None:
            intended = "device" if gen.device.type == "cuda" else "host"
        return {"generator": "custom", "generator_device": intended}
