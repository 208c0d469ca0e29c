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

import sys
import types
from typing import Any

import torch

from cgtool.model.trace import RecordStreamEvent
from cgtool.trace.standin_api import (
    CAPTURE_STREAM,
    DEFAULT_STREAM,
    CpuMode,
    Event,
    Generator,
    StandinStreams,
    Stream,
    StreamContext,
    called_outside_torch,
    is_cuda_device,
    run_on_cpu,
    set_active,
)


class CudaStandins(StandinStreams):
    """The installed stand-ins: the emulated streams, and what was replaced (restored on exit)."""

    def __init__(self, record: RecordStreamEvent | None = None) -> None:
        super().__init__(record)
        self._saved: list[tuple[Any, str, Any]] = []
        self._mode: CpuMode | None = None

    def paused(self) -> _Paused:
        """Context: the device-rewriting mode is off (a Tracer with call=run_on_cpu does its work)."""
        return _Paused(self)

    # ---- install / restore -------------------------------------------------------------------
    def _set(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _MISSING) if isinstance(owner, type)
                            else getattr(owner, name, _MISSING)))
        setattr(owner, name, value)

    def __enter__(self) -> CudaStandins:
        set_active(self)
        try:
            self._install()
            self._mode = CpuMode()
            self._mode.__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
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
        set_active(None)

    def _install(self) -> None:
        c = torch.cuda
        real_available, real_count = c.is_available, c.device_count

        def is_available() -> bool:
            return True if called_outside_torch() else real_available()

        def device_count() -> int:
            return 1 if called_outside_torch() else real_count()

        def is_current_stream_capturing() -> bool:
            return self.capturing and called_outside_torch()

        def synchronize(device: Any = None) -> None:
            self.report("sync-device", None, None)

        def set_stream(stream: Stream) -> None:
            if stream is not None:
                self.switch(stream.stream_id)

        props = types.SimpleNamespace(name="cgtool CPU stand-in", major=9, minor=0, total_memory=80 << 30,
                                      multi_processor_count=132, is_integrated=False)
        for name, value in {
            "is_available": is_available, "device_count": device_count,
            "Stream": Stream, "Event": Event, "StreamContext": StreamContext, "stream": StreamContext,
            "current_stream": lambda device=None: self.stream(self.current),
            "default_stream": lambda device=None: self.stream(DEFAULT_STREAM),
            "set_stream": set_stream, "synchronize": synchronize,
            "ExternalStream": lambda stream_ptr, device=None: Stream(),
            "is_current_stream_capturing": is_current_stream_capturing,
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
        self._install_optimizer_health_check()
        self._install_fused_check()
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

    def _install_fused_check(self) -> None:
        """An optimizer whose fused kernel has no CUDA version (Adagrad in torch 2.11: `_device_dtype_check_for_fused
        (p, cuda_unsupported=True)`) refuses CUDA parameters; on the CPU run its parameters stand for CUDA ones, so
        the stand-in refuses them as torch does on a GPU (the CPU is among the fused devices)."""
        optimizer = sys.modules.get("torch.optim.optimizer")
        real = getattr(optimizer, "_device_dtype_check_for_fused", None)
        devices = getattr(optimizer, "_get_fused_kernels_supported_devices", None)
        if real is None or devices is None:
            return

        def check(p: Any, cuda_unsupported: bool = False) -> None:
            if cuda_unsupported:
                supported = [d for d in devices() if d != "cuda"]
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                                   f"devices: {supported} but {p.dtype} and cuda")
            real(p, cuda_unsupported)

        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("torch.optim") and \
                    getattr(module, "_device_dtype_check_for_fused", None) is real:
                self._set(module, "_device_dtype_check_for_fused", check)

    def _install_optimizer_health_check(self) -> None:
        """torch's capture health check (Optimizer._accelerator_graph_capture_health_check) returns at once
        without CUDA; its stand-in decides as torch does on a GPU, during the emulated capture: step() of an
        optimizer whose param groups are not all capturable=True (a group without the flag, as Adafactor's,
        fails torch's `group["capturable"]` too) is refused. Reported as an "optimizer-check" event: stream =
        number of param groups, target = how many are not capturable."""
        optimizer = torch.optim.Optimizer

        def health_check(opt: Any) -> None:
            if self.capturing and not torch.compiler.is_compiling():
                groups = opt.param_groups
                self.report("optimizer-check", len(groups), sum(1 for g in groups if not g.get("capturable", False)))

        for name in ("_accelerator_graph_capture_health_check", "_cuda_graph_capture_health_check"):
            if name in optimizer.__dict__:
                self._set(optimizer, name, health_check)

    def _install_grad_scaler(self) -> None:
        """GradScaler("cuda") disables itself without CUDA; on the CPU run it scales on the CPU instead."""
        scaler = torch.amp.GradScaler
        real_init = scaler.__init__

        def __init__(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
            real_init(self, "cpu" if is_cuda_device(device) else device, *args, **kwargs)

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


def cuda_standins(record: RecordStreamEvent | None = None) -> CudaStandins:
    """Context manager: install the stand-ins (CPU-only builds), reporting stream calls to `record`."""
    return CudaStandins(record)


__all__ = ["CAPTURE_STREAM", "DEFAULT_STREAM", "CudaStandins", "Event", "Generator", "Stream", "cuda_standins",
           "run_on_cpu"]
