"""The environment a report was made on, as one console line."""

from __future__ import annotations

from typing import Any


def describe(env: dict[str, Any]) -> str:
    """One line for the console: `NVIDIA H100 80GB HBM3 (sm 9.0) · driver 13.0 · torch 2.11.0+cu130 …`."""
    parts = []
    if env.get("gpu"):
        parts.append(f"{env['gpu']} (sm {env.get('capability', '?')})")
        if env.get("driver"):
            parts.append(f"driver CUDA {env['driver']}")
    else:
        parts.append("no CUDA device")
    if env.get("torch"):
        parts.append(f"torch {env['torch']}" + (f" (CUDA {env['torch_cuda']})" if env.get("torch_cuda") else ""))
    if env.get("cuda_bindings"):
        parts.append(f"cuda-bindings {env['cuda_bindings']}")
    parts.append(f"Python {env.get('python', '?')}")
    return " · ".join(parts)
