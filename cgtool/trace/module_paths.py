"""The module path (`model.layers.3.self_attn`) running at each traced op: global forward hooks keep the stack of
running nn.Modules while the tracer records, and each module entry or exit notes the tracer's op position. A
module is named by its attribute path from the outermost running module (as named_modules() names it); one that
is no submodule of the module that called it is named by its class."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class ModulePaths:
    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.marks: dict[int, tuple[list[int], list[str]]] = {}  # iteration index -> (op positions, paths)
        self.stack: list[tuple[Any, str]] = []  # (module, path) of the forwards running
        self.names: dict[tuple[int, int], str] = {}  # (id(parent), id(child)) -> path below the parent

    @contextmanager
    def hooks(self) -> Iterator[None]:
        import torch.nn.modules.module as mm

        h1 = mm.register_module_forward_pre_hook(self._enter)
        h2 = mm.register_module_forward_hook(self._exit, always_call=True)
        try:
            yield
        finally:
            h1.remove()
            h2.remove()
            self.stack.clear()

    def _enter(self, module: Any, args: Any) -> None:
        try:
            path = self._path(module)
            self.stack.append((module, path))
            self._mark(path)
        except Exception:  # noqa: BLE001 - never break the user's forward
            pass

    def _exit(self, module: Any, args: Any, out: Any) -> None:
        try:
            if self.stack and self.stack[-1][0] is module:
                self.stack.pop()
                self._mark(self.stack[-1][1] if self.stack else "")
        except Exception:  # noqa: BLE001
            pass

    def _path(self, module: Any) -> str:
        if not self.stack:
            return ""  # the outermost module: its children are named from it
        parent, prefix = self.stack[-1]
        key = (id(parent), id(module))
        if key not in self.names:
            found = next((name for name, m in parent.named_modules() if m is module and name), None)
            self.names[key] = found if found is not None else type(module).__name__
        name = self.names[key]
        return f"{prefix}.{name}" if prefix else name

    def _mark(self, path: str) -> None:
        ops = self.tracer.ops
        if ops is None:
            return
        pos, paths = self.marks.setdefault(self.tracer.iteration_index, ([], []))
        pos.append(len(ops))
        paths.append(path)

    def of_ops(self, iteration: int, n_ops: int) -> list[str]:
        """The innermost running module's path at each of an iteration's ops ("" outside every module)."""
        pos, paths = self.marks.get(iteration, ([], []))
        out = []
        for i in range(n_ops):
            k = bisect_right(pos, i) - 1
            out.append(paths[k] if k >= 0 else "")
        return out
