"""What one torch.compile call is, read from the call as it happens: where it was written (the user's file or a
library's, and the user's line that led there), what it compiles, and whether it asks for CUDA graphs. The compile
watch (trace/compile_watch.py) makes a CompileSite of each call with `site_of`."""

from __future__ import annotations

import os
import types
from typing import Any

from cgtool.model.compiled import CompileSite
from cgtool.model.frame import Frame
from cgtool.script.frames import is_user_file, make_frame

CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


def site_of(form: str, caller: types.FrameType, target: Any, kwargs: dict[str, Any], phase: str) -> CompileSite:
    """The CompileSite of one compile call, from the values it got."""
    mode = kwargs.get("mode") or ""
    mode = mode if isinstance(mode, str) else repr(mode)
    backend = kwargs.get("backend", "inductor")
    backend_name = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
    given = kwargs.get("options")
    options = given if isinstance(given, dict) else {}
    opt = options.get("triton.cudagraphs")
    if backend_name == "cudagraphs":
        graphs = True
    elif backend_name != "inductor":
        graphs = not isinstance(backend, str)  # a callable backend (a framework's): only a run can tell
    elif opt is not None:
        graphs = bool(opt)
    else:
        graphs = mode in CUDAGRAPH_MODES or (not mode and _inductor_cudagraphs_on())
    if opt and not mode:
        mode = 'options={"triton.cudagraphs": True}'
    frame = _site_frame(caller)
    user = frame if frame is not None and is_user_file(frame.file) else _innermost_user(caller)
    return CompileSite(frame.file if frame else "", frame.line if frame else 0, mode, backend_name, graphs,
                       frame.source if frame else "", target=_target_name(target), form=form, phase=phase,
                       library=frame is not None and not is_user_file(frame.file),
                       called_from=None if user is None or user == frame else user)


def _inductor_cudagraphs_on() -> bool:
    try:
        import torch._inductor.config as cfg

        return bool(cfg.triton.cudagraphs)
    except Exception:
        return False


def _site_frame(f: types.FrameType | None) -> Frame | None:
    """The innermost frame outside torch and cgtool: where the compile call was written (user or library)."""
    from cgtool.trace.standin_api import TORCH_AND_CGTOOL

    while f is not None:
        path = os.path.abspath(f.f_code.co_filename).replace("\\", "/")
        if not path.startswith(TORCH_AND_CGTOOL) and not f.f_code.co_filename.startswith("<"):
            return make_frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def _innermost_user(f: types.FrameType | None) -> Frame | None:
    while f is not None:
        if is_user_file(f.f_code.co_filename):
            return make_frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def called_by_module_compile(caller: types.FrameType) -> bool:
    return caller.f_code.co_name == "compile" and caller.f_code.co_filename.endswith(os.path.join("nn", "modules",
                                                                                                  "module.py"))


def code_of(target: Any) -> types.CodeType | None:
    fn = getattr(target, "__func__", target)  # a bound method (Module._call_impl)
    module = getattr(target, "__self__", None)
    import torch

    mod = target if isinstance(target, torch.nn.Module) else module
    if isinstance(mod, torch.nn.Module):
        fn = getattr(type(mod).forward, "__code__", None)
        return fn if isinstance(fn, types.CodeType) else None
    return getattr(fn, "__code__", None)


def code_ranges(target: Any) -> list[tuple[str, int, int]]:
    """(file, first line, last line) of the source dynamo compiles for `target`: the function, or the forward of
    the module and of each of its submodules (their code is inlined into the same graphs)."""
    import torch

    codes: list[types.CodeType] = []
    module = getattr(target, "__self__", None)
    mod = target if isinstance(target, torch.nn.Module) else module if isinstance(module, torch.nn.Module) else None
    if mod is not None:
        for sub in mod.modules():
            code = getattr(type(sub).forward, "__code__", None)
            if isinstance(code, types.CodeType) and code not in codes:
                codes.append(code)
    else:
        code = getattr(getattr(target, "__func__", target), "__code__", None)
        if isinstance(code, types.CodeType):
            codes.append(code)
    out = []
    for code in codes:
        lines = [ln for _, _, ln in code.co_lines() if ln]
        if lines and is_user_file(code.co_filename):
            out.append((os.path.abspath(code.co_filename), code.co_firstlineno, max(lines)))
    return out


def _target_name(target: Any) -> str:
    module = getattr(target, "__self__", None)
    obj = module if module is not None and type(module).__name__ != "module" else target
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return name if isinstance(name, str) else type(obj).__name__


__all__ = ["CUDAGRAPH_MODES", "called_by_module_compile", "code_of", "code_ranges", "site_of"]
