"""Find compiled code while the script runs, wherever it is compiled: every call of `torch.compile` (in the
script, an imported module, a library, a decorator, `nn.Module.compile()`) and of `torch._dynamo.optimize`,
with the arguments it really got and the file:line that called it. Also torch's own run-time records of what
dynamo did: graph breaks (with the user's line) and recompiles, and the user's call that led to each.

Nothing is changed in what torch.compile does, except on request: `backend` swaps the backend (the CPU analysis
compiles with "eager": dynamo's graph breaks without inductor), `identity` returns the uncompiled code."""

from __future__ import annotations

import logging
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cgtool.model.compiled import CompileSite, wants_cudagraphs
from cgtool.model.frame import Frame
from cgtool.script.frames import is_user_file, make_frame
from cgtool.trace.compile_sites import CUDAGRAPH_MODES, called_by_module_compile, code_of, code_ranges, site_of
from cgtool.trace.patches import Patches
DYNAMO_ARTIFACTS = ("__graph_breaks", "__recompiles")


class CompileWatch:
    """Context manager: wrap torch.compile and torch._dynamo.optimize, hook dynamo's graph-break and recompile
    records. `sites` (one per compile call, in call order) and `records` fill while it is on; `phase` is the
    script's phase the caller is in ("load", "setup", "step")."""

    def __init__(self, backend: str | None = None, identity: bool = False) -> None:
        self.backend = backend
        self.identity = identity
        self.sites: list[CompileSite] = []
        self.records: list[dict[str, Any]] = []
        self.targets: dict[tuple[str, int, str], str] = {}  # (file, first line, name) of compiled code -> target
        self._orig_compile: Any = None
        self.code_ranges: list[tuple[str, int, int]] = []  # (file, first, last line) of the compiled code's source
        self.phase = "load"
        self.iteration: int | None = None
        self._inside = threading.local()
        self._patches = Patches()

    # -- switching on and off -------------------------------------------------------------------------------
    def __enter__(self) -> CompileWatch:
        import torch

        self._orig_compile = torch.compile
        self._patches.set(torch, "compile", self._compile_wrapper(torch.compile))
        # torch._dynamo costs about a second to import: wrap its `optimize` now if it is loaded, else when it is
        if "torch._dynamo" in sys.modules:
            self._wrap_optimize()
        else:
            hook = _AfterImport("torch._dynamo", self._wrap_optimize)
            sys.meta_path.insert(0, hook)
            self._patches.on_undo(lambda: sys.meta_path.remove(hook) if hook in sys.meta_path else None)
        self._hook_logging()
        self._no_compile_caches()
        return self

    def _wrap_optimize(self) -> None:
        import torch._dynamo
        import torch._dynamo.eval_frame as ef

        opt = torch._dynamo.optimize
        wrapped = self._optimize_wrapper(opt)
        self._patches.set(torch._dynamo, "optimize", wrapped)
        if getattr(ef, "optimize", None) is opt:
            self._patches.set(ef, "optimize", wrapped)

    def __exit__(self, *exc: object) -> None:
        self._patches.undo_all()

    def _no_compile_caches(self) -> None:
        """inductor's FX graph cache and AOT autograd's cache skip the compile on a hit, and with it torch's records
        of what it did (graph partitions at CPU ops, skips): a second run of the same script would report less.
        Off while the watch is on, so every run compiles and says the same (through the environment when inductor's
        config is not loaded yet: it reads these variables when it is)."""
        import importlib

        for module, name, env in (("torch._inductor.config", "fx_graph_cache", "TORCHINDUCTOR_FX_GRAPH_CACHE"),
                                  ("torch._inductor.config", "fx_graph_remote_cache", "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE"),
                                  ("torch._functorch.config", "enable_autograd_cache", "TORCHINDUCTOR_AUTOGRAD_CACHE")):
            if module not in sys.modules:
                self._patches.set_env(env, "0")
                continue
            cfg = importlib.import_module(module)
            if getattr(cfg, name, None):
                self._patches.set(cfg, name, False)

    # -- what is compiled, and where --------------------------------------------------------------------------
    @property
    def graphing(self) -> bool:
        return wants_cudagraphs(self.sites)

    def _compile_wrapper(self, orig: Any) -> Any:
        watch = self

        def compile(model: Any = None, *args: Any, **kwargs: Any) -> Any:  # noqa: A001 (torch's own name)
            if getattr(watch._inside, "on", False):
                return orig(model, *args, **kwargs)
            caller = sys._getframe(1)
            if model is None:  # @torch.compile(mode=...): the site is this call; the target comes later
                def decorate(fn: Any) -> Any:
                    return watch._record("torch.compile", caller, fn, kwargs, lambda: orig(fn, *args, **kwargs))

                return decorate
            form = "Module.compile()" if called_by_module_compile(caller) else "torch.compile"
            return watch._record(form, caller, model, kwargs, lambda: orig(model, *args, **kwargs))

        compile.__wrapped__ = orig  # type: ignore[attr-defined]
        compile.__doc__ = orig.__doc__
        return compile

    def _optimize_wrapper(self, orig: Any) -> Any:
        watch = self

        def optimize(*args: Any, **kwargs: Any) -> Any:
            if getattr(watch._inside, "on", False):
                return orig(*args, **kwargs)
            caller = sys._getframe(1)
            backend = kwargs.get("backend", args[0] if args else "inductor")
            ctx = watch._call(lambda: orig(*args, **kwargs))

            def decorate(fn: Any) -> Any:
                return watch._record("torch._dynamo.optimize", caller, fn, {"backend": backend}, lambda: ctx(fn))

            return _OptimizeProxy(ctx, decorate)

        optimize.__wrapped__ = orig  # type: ignore[attr-defined]
        return optimize

    def _call(self, fn: Any) -> Any:
        self._inside.on = True
        try:
            return fn()
        finally:
            self._inside.on = False

    def _record(self, form: str, caller: types.FrameType, target: Any, kwargs: dict[str, Any], compile_: Any) -> Any:
        kwargs = dict(kwargs)
        site = site_of(form, caller, target, kwargs, self.phase)
        self.sites.append(site)
        code = code_of(target)
        if code is not None:
            self.targets[(code.co_filename, code.co_firstlineno, code.co_name)] = site.target
        self.code_ranges.extend(code_ranges(target))
        if self.identity:
            return target
        if self.backend is not None:  # the same call, compiled by another backend (no mode, no options)
            keep = {k: v for k, v in kwargs.items() if k in ("fullgraph", "dynamic", "disable")}
            return self._call(lambda: self._orig_compile(target, backend=self.backend, **keep))
        return self._call(compile_)

    # -- torch's run-time records --------------------------------------------------------------------------
    def _hook_logging(self) -> None:
        from cgtool.trace import torch_logs

        torch_logs.want("graph_breaks", "recompiles")
        self._patches.on_undo(lambda: torch_logs.release("graph_breaks", "recompiles"))

        def keep(record: logging.LogRecord, logger: str) -> None:
            self.records.append({"logger": logger, "level": record.levelname, "phase": self.phase,
                                 "iteration": self.iteration, "message": record.getMessage()[:20000],
                                 "call": _frame_json(self.call_frame())})

        self._patches.on_undo(torch_logs.keep_records(lambda name: name.endswith(DYNAMO_ARTIFACTS), keep))

    def call_frame(self, start: types.FrameType | None = None) -> Frame | None:
        """The user's line that called into compiled code: the innermost user frame outside every compiled
        function (and dynamo's resume functions) on the current stack."""
        f: types.FrameType | None = start or sys._getframe(1)
        while f is not None:
            code = f.f_code
            if (is_user_file(code.co_filename)
                    and (code.co_filename, code.co_firstlineno, code.co_name) not in self.targets
                    and not code.co_name.startswith("torch_dynamo_resume")):
                return make_frame(code.co_filename, f.f_lineno, code.co_name)
            f = f.f_back
        return None


class _AfterImport:
    """A meta-path finder that runs `then()` once the module `name` has been imported (finds nothing itself)."""

    def __init__(self, name: str, then: Any) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        import importlib.abc

        loader, then, hook = spec.loader, self.then, self

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                if hook in sys.meta_path:
                    sys.meta_path.remove(hook)
                then()

        spec.loader = Loader()
        return spec


class _OptimizeProxy:
    """What torch._dynamo.optimize returns (a decorator and a context manager), with the decorator watched."""

    def __init__(self, ctx: Any, decorate: Any) -> None:
        self._ctx, self._decorate = ctx, decorate

    def __call__(self, fn: Any) -> Any:
        return self._decorate(fn)

    def __enter__(self) -> Any:
        return self._ctx.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._ctx.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


@contextmanager
def dynamo_off() -> Iterator[None]:
    """Compiled code runs eagerly, nothing is compiled (torch.compiler.set_stance("force_eager"); older torch:
    dynamo's `disable` switch). Around the tracer: dynamo would otherwise trace into the tracer's own modes. Without
    torch._dynamo loaded nothing has been compiled, and nothing is done (its import costs about a second)."""
    if "torch._dynamo" not in sys.modules:
        yield
        return
    import torch

    stance = getattr(torch.compiler, "set_stance", None)
    if stance is not None:
        with stance("force_eager"):
            yield
        return
    import torch._dynamo.config as cfg

    old = cfg.disable
    cfg.disable = True
    try:
        yield
    finally:
        cfg.disable = old


def _frame_json(frame: Frame | None) -> dict[str, Any] | None:
    return None if frame is None else frame.to_json()


__all__ = ["CUDAGRAPH_MODES", "CompileWatch", "dynamo_off"]
