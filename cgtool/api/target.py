"""What `cgtool.check` is given, as the worker can reach it: a script path, or a step function found again in
the worker by its module's file and its name there (the worker imports that file as a script)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from cgtool.errors import CgtoolError, ExitCode

SUPPORTED = ("a function named at the top level of a .py file (defined or imported there), which the worker imports "
             "again as a script: not a nested function, a method, a functools.partial, or code typed into a notebook "
             "or `python -c`")


@dataclass(frozen=True)
class Target:
    """A script and its contract's names: `entry`, and setup/inputs (None: none; the settings carry them)."""

    path: str
    entry: str
    settings: dict[str, Any]


def resolve(target: Any, entry: str | None, setup: Any, inputs: Any) -> Target:
    """The script and names for a path (`script.py`, `script.py:fn`) or a step callable; a CgtoolError (usage) that
    says what is supported otherwise."""
    if isinstance(target, (str, os.PathLike)):
        return _script_target(os.fspath(target), entry, setup, inputs)
    if callable(target):
        if entry is not None:
            raise CgtoolError("cgtool.check(step, entry=...): `entry` names a function of a script path; with a "
                              "step function, pass the function itself.", ExitCode.USAGE)
        path, module = _module_file(target, "step")
        names = {"setup_fn": _name_in(module, path, setup, "setup"), "inputs_fn": _name_in(module, path, inputs, "inputs")}
        return Target(path, _name_in(module, path, target, "step") or "step", names)
    raise CgtoolError(f"cgtool.check: expected a script path or a step function, got {type(target).__name__}.",
                      ExitCode.USAGE)


def _script_target(target: str, entry: str | None, setup: Any, inputs: Any) -> Target:
    from cgtool.script.contract import compile_script, entry_name, parse_target

    path, name = parse_target(target, entry)
    compile_script(path)  # a missing or invalid file is a usage error here, before a worker starts
    settings: dict[str, Any] = {}
    for key, given in (("setup_fn", setup), ("inputs_fn", inputs)):
        if given is None:
            continue
        if isinstance(given, str):
            settings[key] = entry_name(given, key[:-3])  # a usage error here, before a worker starts
            continue
        fn_path, module = _module_file(given, key[:-3])
        if os.path.realpath(fn_path) != os.path.realpath(path):
            raise CgtoolError(f"cgtool.check({target!r}, {key[:-3]}=...): {_qualname(given)} is defined in "
                              f"{fn_path}, not in the script; pass its name as a string or put it in the script.",
                              ExitCode.USAGE)
        settings[key] = _name_in(module, fn_path, given, key[:-3])
    return Target(os.path.abspath(path), name, settings)


def _module_file(fn: Callable[..., Any], role: str) -> tuple[str, Any]:
    """The .py file and the module object a function lives in, or a CgtoolError naming what is supported."""
    if not callable(fn) or not hasattr(fn, "__qualname__") or not hasattr(fn, "__module__"):
        raise CgtoolError(f"cgtool.check: {role} must be {SUPPORTED}; got {fn!r}.", ExitCode.USAGE)
    module = sys.modules.get(fn.__module__ or "")
    path = getattr(module, "__file__", None)
    if module is None or not path or not path.endswith(".py") or not os.path.isfile(path):
        raise CgtoolError(f"cgtool.check: {role} {_qualname(fn)} comes from module {fn.__module__!r}, which has no "
                          f".py file the worker could import; {role} must be {SUPPORTED}.", ExitCode.USAGE)
    return os.path.abspath(path), module


def _name_in(module: Any, path: str, fn: Any, role: str) -> str | None:
    """The top-level name under which `module` holds `fn` (its own name first, then any alias); None for None."""
    if fn is None:
        return None
    if isinstance(fn, str):
        return fn
    if not callable(fn):
        raise CgtoolError(f"cgtool.check: {role} must be a function or its name, got {type(fn).__name__}.",
                          ExitCode.USAGE)
    own = getattr(fn, "__name__", "")
    if own and getattr(module, own, None) is fn:
        return own
    alias = next((k for k, v in vars(module).items() if v is fn and not k.startswith("__")), None)
    if alias is not None:
        return alias
    where = "a nested function" if "<locals>" in _qualname(fn) else "not a top-level name of its module"
    raise CgtoolError(f"cgtool.check: {role} {_qualname(fn)} is {where} ({path}); the worker finds functions by "
                      f"their top-level name in the step's file. {role.capitalize()} must be {SUPPORTED}.",
                      ExitCode.USAGE)


def _qualname(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
