"""Temporary changes to other code (an attribute swapped, a hook installed), undone in reverse order: what the
observers of torch.compile (trace/compile_watch.py, capture/trees.py) install while a step runs."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


class Patches:
    def __init__(self) -> None:
        self._undo: list[Callable[[], Any]] = []

    def set(self, owner: Any, name: str, new: Any) -> None:
        """owner.name = new until undo_all()."""
        old = getattr(owner, name)
        setattr(owner, name, new)
        self._undo.append(lambda: setattr(owner, name, old))

    def set_env(self, name: str, value: str) -> None:
        """os.environ[name] = value until undo_all() (then its old value, or unset)."""
        old = os.environ.get(name)
        os.environ[name] = value
        self._undo.append(lambda: os.environ.pop(name, None) if old is None else os.environ.__setitem__(name, old))

    def on_undo(self, undo: Callable[[], Any]) -> None:
        self._undo.append(undo)

    def undo_all(self) -> None:
        """Every change undone, the last first; one that fails does not keep the others from being undone."""
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:
                pass
        self._undo.clear()


__all__ = ["Patches"]
