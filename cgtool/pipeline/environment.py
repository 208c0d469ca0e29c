"""What the run ran on: Python, torch, CUDA, driver, GPU, cuda-bindings (collected in the worker)."""

from __future__ import annotations

import platform
from importlib import metadata
from typing import Any

from cgtool import __version__


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {
        "cgtool": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "cuda_bindings": _version("cuda-bindings") or _version("cuda-python"),
        "torch": None, "torch_cuda": None, "gpu": None, "capability": None, "gpu_memory_gib": None, "driver": None,
    }
    try:
        import torch  # already loaded in the worker: a lookup in sys.modules
    except ImportError:
        return env
    env["torch"] = torch.__version__
    env["torch_cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        env["gpu"] = props.name
        env["capability"] = f"{props.major}.{props.minor}"
        env["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
        from cgtool.graph.cuda import driver_version

        env["driver"] = driver_version()
    return env
