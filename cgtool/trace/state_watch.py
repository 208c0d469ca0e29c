"""Host-side state a CUDA graph cannot replay, watched by the Tracer on the CPU run and the GPU run alike.

- RNG reseeds and RNG state set inside the step (`torch.manual_seed`, `torch.cuda.manual_seed_all`,
  `set_rng_state`, `fork_rng`, ...): while the Tracer is entered the entry points are wrapped, and a call made
  during a recorded iteration by the user's code (or a library other than torch) becomes a host CALL record at
  the user's line, `detail["rng"]` "seed", "state" or "fork". torch's own save-and-restore (checkpointing) is not
  the user's and is left out.
- State tensors rebound instead of updated in place: after each iteration the tensors reachable from setup's
  state (a module's parameters, buffers and tensor attributes, dict and list entries, a user object's attributes,
  a few levels deep) are compared by identity with those after the previous one; a path that now holds another
  tensor object becomes a Rebind of the iteration. A path rebound once is watched in the next iteration: whether
  the step reads the old tensor (state that flows between iterations, not a value recomputed before each use),
  and which op made the new one (its line).
- Python state the step changes: after each iteration the lengths of the lists, dicts and sets reachable from
  setup's state, and the numbers, flags and strings they and user objects (and modules of classes not torch's)
  hold, are compared with those after the previous one; each that differs becomes a HostChange of the iteration
  (a list that grew by tensors names the line of the op that made them).
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import weakref
from collections import deque
from itertools import islice
from typing import Any, Iterator

import torch

from cgtool.model.trace import CALL, HostChange, OpRecord, Rebind
from cgtool.script.contract import STEP_WATCHERS, Args, Script
from cgtool.script.frames import def_frame
from cgtool.trace.standin_api import TORCH_DIR

Tensor = torch.Tensor

# (module, attribute, what it does to the RNG): the public entry points, wrapped where each is reached from.
_RNG_CALLS = (
    ("torch", "manual_seed", "seed"), ("torch", "seed", "seed"), ("torch", "set_rng_state", "state"),
    ("torch.random", "manual_seed", "seed"), ("torch.random", "seed", "seed"),
    ("torch.random", "set_rng_state", "state"), ("torch.random", "fork_rng", "fork"),
    ("torch.cuda", "manual_seed", "seed"), ("torch.cuda", "manual_seed_all", "seed"), ("torch.cuda", "seed", "seed"),
    ("torch.cuda", "seed_all", "seed"), ("torch.cuda", "set_rng_state", "state"),
    ("torch.cuda", "set_rng_state_all", "state"),
    ("torch.cuda.random", "manual_seed", "seed"), ("torch.cuda.random", "manual_seed_all", "seed"),
    ("torch.cuda.random", "seed", "seed"), ("torch.cuda.random", "seed_all", "seed"),
    ("torch.cuda.random", "set_rng_state", "state"), ("torch.cuda.random", "set_rng_state_all", "state"),
)
# torch's RNG plumbing between the user's call and the wrapped one: torch.manual_seed calls
# torch.cuda.manual_seed_all, fork_rng's exit (through contextlib) calls set_rng_state; once torch._dynamo is
# loaded, torch.manual_seed is wrapped by torch._disable_dynamo (torch/_compile.py).
_PLUMBING = (TORCH_DIR + "random.py", TORCH_DIR + "cuda/random.py", TORCH_DIR + "cuda/__init__.py",
             TORCH_DIR + "_compile.py", TORCH_DIR + "_dynamo/eval_frame.py", "/contextlib.py")
_MAX_DEPTH = 3  # containers below the step's arguments: state['ema'][0] is depth 2
_MAX_ENTRIES = 1000  # per container
_MAX_TENSORS = 100_000


class StateWatch:
    """The Tracer's watch of host-side state (see the module docstring). `tracer` is the OpRecorder whose
    iteration records it extends: its `ops`, `frame_table`, `current`, `watched`, `read_paths` and `made`."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.saved: list[tuple[Any, str, Any]] = []
        self.inside = 0  # >0 inside a wrapped RNG call: torch's nested calls are the same call
        self.roots: list[tuple[str, Any]] | None = None  # the step's state arguments, by parameter name
        self.step_frame = -1  # the step's `def` line (trace frame index), for a rebinding of unknown origin
        self.seen: dict[str, weakref.ref] | None = None  # path -> tensor at the end of the previous iteration
        # path -> Python value shown, just before the step's call (after inputs(): what inputs() moves is not the
        # step's); None once the walk failed (that watch alone is off)
        self.host_before: dict[str, str] | None = {}

    # ---- lifecycle (Tracer.__enter__/__exit__, each iteration's enter/exit) ------------------------------
    def install(self) -> None:
        for module_name, attr, kind in _RNG_CALLS:
            owner = sys.modules.get(module_name)
            real = getattr(owner, attr, None) if owner is not None else None
            if real is None or getattr(real, "_cgtool_rng", False):
                continue
            self.saved.append((owner, attr, real))
            setattr(owner, attr, self._wrap(real, f"{module_name}.{attr}", kind))

    def uninstall(self) -> None:
        while self.saved:
            owner, attr, real = self.saved.pop()
            setattr(owner, attr, real)

    def begin(self) -> None:
        STEP_WATCHERS.append(self.on_step)

    def end(self) -> None:
        """After a recorded iteration: its rebinds, and what the next iteration watches."""
        if self.on_step in STEP_WATCHERS:
            STEP_WATCHERS.remove(self.on_step)
        try:
            self._compare()
        except Exception as exc:  # noqa: BLE001 - a watch failure must not reach the user's code
            self.tracer.fail(exc)

    def _compare(self) -> None:
        t = self.tracer
        it, ops = t.current, t.ops
        watched = {path for ref, path in t.watched.values()}
        made, read = t.made, t.read_paths
        t.watched, t.made, t.read_paths = {}, {}, set()
        if self.roots is None or it is None or t.broken:
            return
        t.mute += 1  # walking modules and dicts issues no op of the user's, but be sure
        try:
            now = dict(state_tensors(self.roots))
        finally:
            t.mute -= 1
        if self.seen is not None:
            for path, tensor in now.items():
                ref = self.seen.get(path)
                if ref is None or ref() is tensor:
                    continue
                k = made.get(id(tensor), -1)
                frame = ops[k].frame if ops is not None and 0 <= k < len(ops) and ops[k].frame >= 0 \
                    else self.step_frame
                it.rebinds.append(Rebind(path, frame, (path in read) if path in watched else None))
        self.seen = {path: weakref.ref(tensor) for path, tensor in now.items()}
        t.watched = {id(now[r.path]): (weakref.ref(now[r.path]), r.path) for r in it.rebinds}
        self._compare_host(it, made, ops)

    def _compare_host(self, it: Any, made: dict[int, int], ops: list[OpRecord] | None) -> None:
        """The Python state now against the walk just before the step's call: each value that moved becomes a
        HostChange of the iteration."""
        before = self.host_before
        self.host_before = {} if before is not None else None
        if not before:
            return
        now = self._walk_host()
        if now is None:
            return
        for path, (shown, value) in now.items():
            was = before.get(path)
            if was is None or was == shown:
                continue
            frame, made_here = self.step_frame, False
            if was.startswith("len ") and shown.startswith("len "):  # grew: the op of the step that made a tensor in it
                k = next((made[id(v)] for v in reversed(_new_tensors(value, int(was[4:]))) if id(v) in made), -1)
                if ops is not None and 0 <= k < len(ops):
                    made_here = True
                    frame = ops[k].frame if ops[k].frame >= 0 else frame
            it.host_changes.append(HostChange(path, was, shown, frame, made_here))
        self.tracer.watch_made = any(c.after.startswith("len ") for c in it.host_changes)

    def _walk_host(self) -> dict[str, tuple[str, Any]] | None:
        """host_values of the roots, muted; None (and this watch off for the run) when the walk fails: an object
        in the state that cannot be read must not stop the tracer's other checks."""
        t = self.tracer
        t.mute += 1
        try:
            return dict(host_values(self.roots or []))
        except Exception:  # noqa: BLE001 - the user's objects may raise on any access
            self.host_before = None
            return None
        finally:
            t.mute -= 1

    def on_step(self, script: Script, state: Args) -> None:
        """STEP_WATCHERS hook, just before each call of the step: the step's state arguments (once; the harness
        passes the same state each time), and the Python state as the step finds it."""
        if self.roots is None:
            try:
                step = inspect.unwrap(script.step)
                code = getattr(step, "__code__", None)
                names = _positional_names(step, len(state.args))
                self.roots = [*zip(names, state.args), *state.kwargs.items()]
                if code is not None:
                    frames = self.tracer.trace.frames
                    self.step_frame = len(frames)
                    frames.append(def_frame(code))
            except Exception as exc:  # noqa: BLE001 - a watch failure must not reach the user's step
                self.tracer.fail(exc)
                return
        if self.host_before is not None:
            now = self._walk_host()
            if now is not None:
                self.host_before = {path: shown for path, (shown, _) in now.items()}

    # ---- RNG calls -----------------------------------------------------------------------------------
    def _wrap(self, real: Any, name: str, kind: str) -> Any:
        @functools.wraps(real)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self.inside == 0:
                try:
                    self._record(name, kind, sys._getframe(1))
                except Exception as exc:  # noqa: BLE001 - never break the user's call
                    self.tracer.fail(exc)
            self.inside += 1
            try:
                return real(*args, **kwargs)
            finally:
                self.inside -= 1

        wrapper._cgtool_rng = True  # type: ignore[attr-defined]
        return wrapper

    def _record(self, name: str, kind: str, f: types.FrameType | None) -> None:
        t = self.tracer
        if t.ops is None or t.broken or t.mute:
            return
        while f is not None and f.f_code.co_filename.replace("\\", "/").endswith(_PLUMBING):
            f = f.f_back
        if f is None or f.f_code.co_filename.replace("\\", "/").startswith(TORCH_DIR):
            return  # torch's own save and restore (torch.utils.checkpoint), not the user's reseed
        inner, outer = t.frame_table.locate(f)
        if inner < 0:
            return  # the harness's, or under inputs()
        t.ops.append(OpRecord(CALL, name, frame=inner, outer=outer, host=True, detail={"rng": kind},
                              lib=t.frame_table.issuer))


def _positional_names(step: Any, n: int) -> list[str]:
    try:
        params = [p for p in inspect.signature(step).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"arg{i}" for i in range(n)]


def state_tensors(roots: list[tuple[str, Any]]) -> Iterator[tuple[str, Tensor]]:
    """(path, tensor) for every tensor reachable from the roots: modules (parameters, buffers, tensor
    attributes, their submodules), dict and list entries and a user object's attributes, _MAX_DEPTH deep.
    Optimizers and torch's other objects are not walked: they update their own state in place."""
    seen: set[int] = set()
    count = 0
    stack: list[tuple[str, Any, int]] = [(name, value, 0) for name, value in reversed(roots)]
    while stack and count < _MAX_TENSORS:
        path, value, depth = stack.pop()
        try:
            if isinstance(value, Tensor):
                count += 1
                yield path, value
                continue
            if id(value) in seen or depth > _MAX_DEPTH:
                continue
            seen.add(id(value))
            if isinstance(value, torch.nn.Module):
                found = [(f"{prefix}.{k}", v) for prefix, m in value.named_modules(prefix=path)
                         for group in (m._parameters, m._buffers, m.__dict__)
                         for k, v in islice(group.items(), _MAX_ENTRIES) if isinstance(v, Tensor)]
                count += len(found)
                yield from found
            else:
                stack.extend(_children(path, value, depth))
        except Exception:  # noqa: BLE001 - a dead weakref proxy, an attribute that raises: leave it out
            continue


def _children(path: str, value: Any, depth: int) -> list[tuple[str, Any, int]]:
    """(path, value, depth) of a dict's entries (str and int keys), a list's, tuple's or deque's items, a user
    object's attributes; none for anything else."""
    if isinstance(value, dict):
        return [(f"{path}[{k!r}]", v, depth + 1) for k, v in islice(value.items(), _MAX_ENTRIES)
                if isinstance(k, (str, int))]
    if isinstance(value, (list, tuple, deque)):
        return [(f"{path}[{i}]", v, depth + 1) for i, v in enumerate(islice(value, _MAX_ENTRIES))]
    if _user_object(value):
        return [(f"{path}.{k}", v, depth + 1) for k, v in islice(vars(value).items(), _MAX_ENTRIES)
                if not k.startswith("__")]
    return []


_SCALARS = (bool, int, float, str, np.generic) if (np := sys.modules.get("numpy")) else (bool, int, float, str)
# a module's own attributes (nn.Module's __init__ sets them; `training` moves with train()/eval(), not with steps)
_MODULE_OWN = frozenset(vars(torch.nn.Module()))


def host_values(roots: list[tuple[str, Any]]) -> Iterator[tuple[str, tuple[str, Any]]]:
    """(path, (shown, value)) for the Python state reachable from the roots, _MAX_DEPTH deep: the length of each
    list, dict, set and deque ("len 3"), and each number, flag or string held in one of them, in a user object's
    attributes or in the attributes a module of a class not torch's adds to nn.Module's (`self.calls`). Tensors
    are state_tensors'; torch's own objects (optimizers, schedulers, GradScaler, and the user's subclasses of them)
    are not walked: CG402 reads the numbers they pass on. An object that raises when read is left out."""
    seen: set[int] = set()
    count = 0
    stack: list[tuple[str, Any, int]] = [(name, value, 0) for name, value in reversed(roots)]
    while stack and count < _MAX_TENSORS:
        path, value, depth = stack.pop()
        try:
            if isinstance(value, Tensor) or value is None:
                continue
            if isinstance(value, _SCALARS):
                if depth > 0:  # the step's own arguments are passed by value
                    count += 1
                    yield path, (_shown(value), value)
                continue
            if id(value) in seen or depth > _MAX_DEPTH:
                continue
            seen.add(id(value))
            if isinstance(value, torch.nn.Module):
                for prefix, m in value.named_modules(prefix=path):
                    if _torch_own(m):
                        continue
                    seen.add(id(m))
                    stack.extend((f"{prefix}.{k}", v, depth + 1) for k, v in islice(vars(m).items(), _MAX_ENTRIES)
                                 if k not in _MODULE_OWN and not isinstance(v, torch.nn.Module))
                continue
            if isinstance(value, (list, dict, set, deque)):
                count += 1
                yield path, (f"len {len(value)}", value)
            stack.extend(_children(path, value, depth))
        except Exception:  # noqa: BLE001 - a dead weakref proxy, a container that refuses slices: leave it out
            continue


def _shown(value: Any) -> str:
    """A Python value as a HostChange shows it: repr, at most 80 characters (a long string is not copied whole)."""
    if isinstance(value, str):
        return repr(value[:80])
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**80:
        return f"<int of {value.bit_length()} bits, ending {value % 10**12}>"
    item = getattr(value, "item", None)  # a numpy scalar: as the number it holds
    return repr(item() if callable(item) else value)[:80]


def _new_tensors(value: Any, before: int) -> list[Tensor]:
    """The tensors a container that grew from `before` entries gained: in a list's or deque's new items, a dict's
    last values (insertion order), one level into a new item that is itself a container (`{"loss": t}`)."""
    if isinstance(value, dict):
        new = list(islice(reversed(list(value.values())), max(0, len(value) - before)))
    elif isinstance(value, (list, deque)):
        new = list(value)[before:] if len(value) > before else []
    else:
        return []
    found: list[Tensor] = []
    for v in new[:_MAX_ENTRIES]:
        inner = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else (v,)
        found += [t for t in inner if isinstance(t, Tensor)]
    return found


def _torch_own(value: Any) -> bool:
    """An object of torch's own classes (torch.*, not a package named torch_something or torchvision)."""
    module = type(value).__module__ or ""
    return module == "torch" or module.startswith("torch.")


def _user_object(value: Any) -> bool:
    """An instance of a class of the user's or a library's (a Trainer, an EMA helper), not torch's own object
    (an optimizer, a GradScaler), nor cgtool's stand-in for one (the CPU run's CUDA events and streams: on the GPU
    they are torch's), a module, a class or a function."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, *_TORCH_STATEFUL)):
        return False
    module = type(value).__module__ or ""
    return hasattr(value, "__dict__") and module != "builtins" and not _torch_own(value) \
        and not module.startswith("cgtool.")


# torch's objects that keep their own state, the user's subclasses of them included (a custom warmup scheduler)
_TORCH_STATEFUL = (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, torch.amp.GradScaler)
