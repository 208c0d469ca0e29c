"""The Python side of setup()'s state: every object and container reachable from it (modules, optimizers, user
objects, their dicts and lists) with its contents, saved and put back in place, so two runs of a step compared from
identical state also start from the same counters, flags and lists. Tensors' values are tensors.py's snapshot; here
a tensor is kept as the same object. `SavedState` is the whole starting point of a run that is compared with
another (or that must not move what it ran on): tensors, attributes and the CUDA RNG state, put back by one call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Saved = list[tuple[Any, Any]]  # (the object or container, a shallow copy of its contents)


@dataclass
class SavedState:
    """setup()'s state as it was when saved: the values of its tensors (`pairs`), the Python side of every object
    in it (save_attributes) and the CUDA RNG state."""

    pairs: list[tuple[str, Any]]  # (name, tensor) of the state tensors put back
    tensors: list[Any]  # their values (clones)
    attributes: Saved
    rng: Any

    @classmethod
    def of(cls, state: Any, pairs: list[tuple[str, Any]] | None = None) -> SavedState:
        """The state of an Args (setup's) now; `pairs`: the tensors to put back (default: every state tensor;
        [] for none, where a run changes no tensor values, e.g. a second capture)."""
        import torch

        from cgtool.capture.tensors import snapshot, state_tensors

        tree = (state.args, state.kwargs)
        pairs = state_tensors(tree) if pairs is None else pairs
        return cls(pairs, snapshot(pairs), save_attributes(tree), torch.cuda.get_rng_state())

    def restore(self) -> None:
        """Put everything back in place (the same tensors and containers, their saved contents)."""
        import torch

        from cgtool.capture.tensors import restore

        restore_attributes(self.attributes)
        restore(self.pairs, self.tensors)
        torch.cuda.set_rng_state(self.rng)


def save_attributes(state: Any) -> Saved:
    """A shallow copy of every reachable object's __dict__ and of every reachable dict, list and set. Restored in
    place, so whatever holds a reference to one of them (a hook handle, an optimizer) sees the old contents."""
    import torch

    saved: Saved = []
    seen: set[int] = set()
    todo = [state]
    while todo:
        value = todo.pop()
        if id(value) in seen or isinstance(value, (torch.Tensor, type, str, bytes, int, float, bool)) or value is None:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            saved.append((value, dict(value)))
            todo.extend(value.values())
        elif isinstance(value, (list, set)):
            saved.append((value, list(value)))
            todo.extend(value)
        elif isinstance(value, tuple):
            todo.extend(value)
        else:
            attrs = getattr(value, "__dict__", None)
            if isinstance(attrs, dict) and type(value).__module__ != "builtins":
                seen.add(id(attrs))
                saved.append((attrs, dict(attrs)))
                todo.extend(attrs.values())
    return saved


def restore_attributes(saved: Saved) -> None:
    """Put every saved container's contents back, in place (entries added since are removed). A container whose
    contents are still the saved ones is left alone: not even rewritten with the same values, so what watches a
    dict's version (torch.compile's guards on a module's __dict__) sees no change where nothing changed."""
    for obj, contents in saved:
        if _unchanged(obj, contents):
            continue
        if isinstance(obj, dict):
            extra = [k for k in obj if k not in contents]
            for k in extra:
                del obj[k]
            obj.update(contents)
        elif isinstance(obj, list):
            obj[:] = contents
        else:
            obj.clear()
            obj.update(contents)


def _unchanged(obj: Any, contents: Any) -> bool:
    """The container holds exactly the saved objects (by identity; same keys, same order for a list)."""
    try:
        if isinstance(obj, dict):
            return len(obj) == len(contents) and all(k in obj and obj[k] is v for k, v in contents.items())
        if isinstance(obj, list):
            return len(obj) == len(contents) and all(a is b for a, b in zip(obj, contents))
        return len(obj) == len(contents) and {id(x) for x in obj} == {id(x) for x in contents}
    except Exception:  # a container that does not compare: put it back
        return False
