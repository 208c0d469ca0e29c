"""cgtool: find out whether a PyTorch step can be captured as a CUDA graph, and what replay buys.

`cgtool.check(step or "script.py")` is the Python API (cgtool/api/); it loads on first use, so `import cgtool`
stays as cheap as `cgtool --help` (no torch)."""

from typing import Any

__version__ = "0.1.0"
__all__ = ["CheckReport", "__version__", "check"]


def __getattr__(name: str) -> Any:
    if name in ("check", "CheckReport"):
        import importlib  # by name: the API imports this package (its version), not the other way at import time

        return getattr(importlib.import_module("cgtool.api"), name)
    raise AttributeError(f"module 'cgtool' has no attribute {name!r}")
