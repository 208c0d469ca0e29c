"""The step's modules: found in setup()'s state (nn.Module values and their named_children to a depth), watched
while the step runs (calls, arguments, the ops each one issued), and the CPU analysis's error findings
attributed to the modules whose ops carry them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cgtool.capture.module_graphs import Call
from cgtool.model.finding import Finding
from cgtool.model.partial import CLEAN, CPU_ONLY, FAILS, NOT_CALLED, ModuleEntry, ModuleMap
from cgtool.model.report import ErrorRecord
from cgtool.script.contract import Args, Script
from cgtool.script.session import ScriptSession


@dataclass
class Watched:
    path: str
    module: Any
    depth: int
    calls: int = 0  # calls in the last iteration watched
    total: int = 0  # calls in every iteration watched
    last: Call | None = None  # the last call's arguments (kept only when asked)
    ranges: list[tuple[list[Any], int, int]] = field(default_factory=list)  # (tracer op list, start, end)
    changed_inputs: set[str] = field(default_factory=set)  # its arguments it updated in place ("args[0]")
    changed_attributes: set[str] = field(default_factory=set)  # its plain attributes a call changed ("calls")

    @property
    def container(self) -> bool:
        return is_container(self.module)

    def never_called(self) -> str:
        """Why a module with no call has none."""
        if self.container:
            return f"a container ({type(self.module).__name__}) without a forward: its modules are listed below it"
        return "the step never called it"


def is_container(module: Any) -> bool:
    """An nn.ModuleList / nn.ModuleDict: no forward of its own, never called; its children are."""
    import torch

    return type(module).forward is torch.nn.Module.forward


def find_modules(state: Args, depth: int) -> list[Watched]:
    """nn.Module values of the state (by argument name) and their children to `depth`, each module once.

    A container without a forward of its own (nn.ModuleList, nn.ModuleDict) is never called, so it does not use
    up a level: its children are listed one level below it even past `depth` (`model.layers.0`, …), which is
    where a transformer's blocks are."""
    import torch

    roots = [(k, v) for k, v in state.kwargs.items()] + [(f"arg{i}", v) for i, v in enumerate(state.args)]
    found: list[Watched] = []
    seen: set[int] = set()

    def walk(path: str, m: Any, d: int, expand: bool = True) -> None:
        if id(m) in seen:
            return
        seen.add(id(m))
        found.append(Watched(path, m, d))
        if not expand:
            return
        if d < depth or is_container(m):
            for name, child in m.named_children():
                walk(f"{path}.{name}", child, d + 1, expand=d < depth)

    for name, value in roots:
        if isinstance(value, torch.nn.Module):
            walk(name, value, 0)
    return found


class ModuleWatch:
    """Forward hooks on the watched modules that count each one's calls, keep its last call's arguments
    (keep_calls; positional and keyword) and the range of ops the CPU analysis's tracer recorded during it."""

    def __init__(self, keep_calls: bool = False) -> None:
        self.by_id: dict[int, Watched] = {}
        self.keep_calls = keep_calls
        self._stack: list[tuple[Any, ...]] = []
        self._handles: list[Any] = []
        self._active = False

    def add(self, modules: list[Watched]) -> None:
        for w in modules:
            if id(w.module) not in self.by_id:
                self.by_id[id(w.module)] = w
                if self._active:
                    self._hook(w.module)

    def new_iteration(self) -> None:
        for w in self.by_id.values():
            w.calls = 0

    def __enter__(self) -> ModuleWatch:
        self._active = True
        for w in self.by_id.values():
            self._hook(w.module)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._active = False
        for h in self._handles:
            h.remove()
        self._handles = []

    def _hook(self, module: Any) -> None:
        """Per-module hooks (global pre-hooks never see keyword arguments): the pre-hook with kwargs, the
        post-hook also when forward raises."""
        self._handles.append(module.register_forward_pre_hook(self._pre, with_kwargs=True))
        try:
            self._handles.append(module.register_forward_hook(self._post, always_call=True))
        except TypeError:  # a torch without always_call
            self._handles.append(module.register_forward_hook(self._post))

    def _pre(self, module: Any, args: Any, kwargs: Any) -> None:
        w = self.by_id.get(id(module))
        if w is None:
            return
        import torch

        w.calls += 1
        w.total += 1
        if self.keep_calls:
            params = any(p.requires_grad for p in module.parameters())
            from torch.utils._pytree import tree_leaves

            grad = torch.is_grad_enabled() and (params or any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in tree_leaves((args, kwargs))))
            w.last = Call(tuple(args), dict(kwargs or {}), grad, torch.is_grad_enabled(),
                          torch.is_inference_mode_enabled(), _autocast_dtype())
        ops = _tracer_ops()
        self._stack.append((w, ops, len(ops) if ops is not None else 0, _versions(args, kwargs),
                            _plain_attributes(module)))

    def _post(self, module: Any, args: Any, out: Any) -> None:
        if not self._stack or self._stack[-1][0].module is not module:
            return
        w, ops, start, versions, attributes = self._stack.pop()
        w.changed_inputs.update(name for name, t, v in versions if t._version != v)
        now = _plain_attributes(module)
        w.changed_attributes.update(k for k, v in attributes.items() if now.get(k, v) != v)
        if self.keep_calls and w.last is not None and w.last.grad:
            import torch
            from torch.utils._pytree import tree_leaves

            # backward only through outputs that need grad: a module whose outputs do not (rotary embeddings: cos
            # and sin from the input's dtype alone) is captured forward-only; make_graphed_callables would record
            # an empty backward graph for it, and its replay fails
            w.last.grad = any(isinstance(o, torch.Tensor) and o.requires_grad for o in tree_leaves(out))
        if ops is not None:
            w.ranges.append((ops, start, len(ops)))


def _autocast_dtype() -> str | None:
    """The CUDA autocast dtype in force ("bfloat16"), None when autocast is off."""
    import torch

    try:
        if torch.is_autocast_enabled("cuda"):
            return str(torch.get_autocast_dtype("cuda")).replace("torch.", "")
    except TypeError:  # an older torch: the CUDA-only spelling
        if torch.is_autocast_enabled():
            return str(torch.get_autocast_gpu_dtype()).replace("torch.", "")
    return None


def _versions(args: Any, kwargs: Any) -> list[tuple[str, Any, int]]:
    """(where, tensor, version counter) of a call's tensor arguments: a version that moved during the call is an
    in-place update of the caller's tensor, which a graphed callable does to its own static copy instead."""
    import torch

    found = [(f"args[{i}]", a) for i, a in enumerate(args)] + [(f"{k}=", v) for k, v in (kwargs or {}).items()]
    out = []
    for name, t in found:
        if isinstance(t, torch.Tensor) and not t.is_inference():  # inference tensors keep no version counter
            out.append((name, t, t._version))
    return out


def _plain_attributes(module: Any) -> dict[str, Any]:
    """The module's own attributes that are plain numbers, strings or flags (a call counter, a step index)."""
    return {k: v for k, v in vars(module).items() if isinstance(v, (int, float, str, bool)) and k != "training"}


def _tracer_ops() -> list[Any] | None:
    """The op list cgtool's tracer is filling now (its dispatch mode is on torch's mode stack), if any."""
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        for mode in _get_current_dispatch_mode_stack():
            tracer = getattr(mode, "tracer", None)
            if tracer is not None and isinstance(getattr(tracer, "ops", None), list):
                return tracer.ops
    except Exception:  # a torch without the helper: no attribution, not a failure
        pass
    return None


class WatchedModules:
    """setup()'s modules, found as setup returns its state and added to a ModuleWatch; each call of the step is a
    new iteration of the watch. Both are hooks of the session that runs the script (`session`)."""

    def __init__(self, watch: ModuleWatch, depth: int) -> None:
        self.watch, self.depth = watch, depth
        self.state: Args | None = None
        self.modules: list[Watched] = []

    def session(self, script: Script, device: Any, size: int | None = None) -> ScriptSession:
        return ScriptSession(script, device, size, on_setup=self._found, before_step=self.watch.new_iteration)

    def _found(self, state: Args) -> None:
        self.state = state
        self.modules = find_modules(state, self.depth)
        self.watch.add(self.modules)


def cpu_module_map(script: Script, depth: int, warmup: int = 3) -> tuple[ModuleMap, list[Finding], list[ErrorRecord]]:
    """The CPU analysis with the modules watched: each module's error findings (by the ops it issued)."""
    import torch

    from cgtool.pipeline.cpu_analysis import analyze_on_cpu

    watch = ModuleWatch()
    watched = WatchedModules(watch, depth)
    with watch:  # the device setup and inputs are given on the CPU run, as the GPU run gives it
        trace, findings, errors = analyze_on_cpu(watched.session(script, torch.device("cuda")), warmup=warmup)
    entries = attribute(trace, findings, watched.modules)
    note = "" if watched.state is not None else "setup() did not run, so no module was found"
    if watched.state is not None and not entries:
        note = "setup() returned no nn.Module (the map needs the model among setup's values)"
    return ModuleMap(CPU_ONLY, depth, tuple(entries), note=note), findings, errors


def attribute(trace: Any, findings: list[Finding], modules: list[Watched]) -> list[ModuleEntry]:
    """A ModuleEntry per module: FAILS with the error findings whose line (and library frame) one of its ops has."""
    from cgtool.checks.common import library_place

    errors = [f for f in findings if f.severity == "error"]
    entries = []
    for w in modules:
        places: dict[tuple[str, int], set[str]] = {}  # the user's line -> the library frames that issued ops there
        for ops, start, end in w.ranges:
            for op in ops[start:end]:
                lib = trace.frame(op.lib)
                lib_text = library_place(lib).rsplit(" in ", 1)[0] if lib is not None else ""
                for index in (op.frame, op.outer):
                    f = trace.frame(index)
                    if f is not None:
                        places.setdefault((f.file, f.line), set()).add(lib_text)
        mine = tuple(f for f in errors if _carries(places.get((f.file or "", f.line or 0)), f.library))
        status = FAILS if mine else (CLEAN if w.total else NOT_CALLED)
        reason = "; ".join(f"{f.rule} at line {f.line} (`{_code(f.source)}`)" + (f" in {f.library}" if f.library else "")
                           for f in mine[:3])
        if status == NOT_CALLED:
            reason = w.never_called()
        entries.append(ModuleEntry(w.path, type(w.module).__name__, w.depth, status, reason, mine))
    return entries


def _carries(libs: set[str] | None, library: str | None) -> bool:
    """The module issued an op at the finding's line (and, for a finding inside a library, from that library
    frame when the module's ops there name one)."""
    if libs is None:
        return False
    named = {x for x in libs if x}
    return not library or not named or any(x in library for x in named)


def _code(source: str | None) -> str:
    return (source or "").split("  #", 1)[0].strip()
