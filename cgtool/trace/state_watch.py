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
- Python state the step changes: just before each call of the step (after inputs()) and after it, the lengths of
  the lists, dicts, sets and deques reachable from setup's state, and the numbers, flags and strings they, user
  objects and modules of classes not torch's hold, are compared; each that the call changed becomes a HostChange
  of the iteration (a container that grew by a tensor the step made names the line of the op that made it).
The walks themselves are trace/state_walk.py's.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import weakref
from typing import Any

import torch

from cgtool.model.trace import CALL, HostChange, OpRecord, Rebind
from cgtool.script.contract import STEP_WATCHERS, Args, Script
from cgtool.script.frames import def_frame
from cgtool.trace.standin_api import TORCH_DIR
from cgtool.trace.state_walk import HostValue, host_values, new_tensors, state_tensors

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
        # path -> the Python value just before the step's call (after inputs(): what inputs() moves is not the
        # step's); None once the walk failed (that watch alone is off)
        self.host_before: dict[str, HostValue] | None = {}

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
        now = self._walk_host() if before else None
        grew = False
        for path, v in (now or {}).items():
            was = before.get(path) if before else None
            if was is None or was.shown == v.shown:
                continue
            frame, made_here = self.step_frame, False
            if was.size is not None and v.size is not None and v.size > was.size:  # grew: the op that made a tensor
                grew = True
                k = next((made[id(t)] for t in reversed(new_tensors(v.value, was.size)) if id(t) in made), -1)
                if ops is not None and 0 <= k < len(ops):
                    made_here = True
                    frame = ops[k].frame if ops[k].frame >= 0 else frame
            it.host_changes.append(HostChange(path, was.shown, v.shown, frame, made_here))
        self.tracer.watch_made = grew

    def _walk_host(self) -> dict[str, HostValue] | None:
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
                self.host_before = now

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
