"""Load a user script and call it through the script contract: setup(device), inputs(i, device), step(...).

A script is a normal Python file. `step` (or the entry named with `script.py:name` / `--entry`) is one
iteration; optional `setup(device)` returns the persistent state and optional `inputs(i, device)` the
fresh inputs of iteration i, each as a dict (keyword arguments) or a tuple (positional arguments).
`step` is called as step(*state, *inputs, **state, **inputs). See docs/script-contract.md.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from cgtool.errors import CgtoolError
from cgtool.model.job import RunSettings

CONTRACT = """\
A cgtool script is a Python file with:
  def setup(device):        # optional, run once: persistent state as a dict or tuple
      model = Model().to(device)
      return {"model": model}
  def inputs(i, device):    # optional: fresh inputs of iteration i, as a dict or tuple
      return {"x": torch.randn(64, 1024, device=device)}
  def step(model, x):       # required: one iteration (forward, or forward+backward+optimizer)
      return model(x)
Pick another entry with `script.py:name` or --entry NAME."""

# Who hears each call of a step, before it runs: watch(script, state). The Tracer's state watch registers here
# while it records an iteration (it compares setup's state tensors between iterations).
STEP_WATCHERS: list[Callable[[Script, Args], None]] = []


@dataclass(frozen=True)
class Args:
    """Positional and keyword arguments built from a dict/tuple returned by setup or inputs."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Any, what: str) -> Args:
        if value is None:
            return cls()
        if isinstance(value, dict):
            bad = [k for k in value if not isinstance(k, str)]
            if bad:
                raise CgtoolError(f"{what} returned a dict with non-string keys {bad!r}; keys must be argument names.")
            return cls((), dict(value))
        if isinstance(value, tuple):
            return cls(value, {})
        return cls((value,), {})  # a single value (a list too) is one positional argument

    def __add__(self, other: Args) -> Args:
        clash = set(self.kwargs) & set(other.kwargs)
        if clash:
            raise CgtoolError(f"setup and inputs both return the argument(s) {sorted(clash)}; each name must come from one.")
        return Args(self.args + other.args, {**self.kwargs, **other.kwargs})


@dataclass(frozen=True)
class Script:
    path: str
    entry: str
    step: Callable[..., Any]
    setup: Callable[..., Any] | None
    inputs: Callable[..., Any] | None
    module: Any
    # the names setup and inputs were looked up by (None: none): a reload of the script (compiled_timing) uses them
    names: tuple[str | None, str | None] = ("setup", "inputs")

    def call_setup(self, device: Any, size: int | None = None) -> Args:
        if self.setup is None:
            return Args()
        return Args.of(_user_call(self.setup, device, **_size_kwarg(self.setup, size), **_rank_kwargs(self.setup)),
                       "setup")

    def call_inputs(self, i: int, device: Any, size: int | None = None) -> Args | None:
        """Inputs of iteration i, or None when the script has no inputs()."""
        if self.inputs is None:
            return None
        return Args.of(_user_call(self.inputs, i, device, **_size_kwarg(self.inputs, size), **_rank_kwargs(self.inputs)),
                       "inputs")

    def call_step(self, state: Args, inputs: Args | None) -> Any:
        for watch in STEP_WATCHERS:
            watch(self, state)
        a = state if inputs is None else state + inputs
        return _user_call(self.step, *a.args, **a.kwargs)

    def accepts_size(self) -> bool:
        return any(fn is not None and "size" in _params(fn) for fn in (self.setup, self.inputs))

    def setup_takes_size(self) -> bool:
        """Whether setup's state depends on the size (else one state serves every size)."""
        return self.setup is not None and "size" in _params(self.setup)


class ScriptExit(Exception):
    """A BaseException that is no Exception (the script's own `class Stop(BaseException)`, GeneratorExit, SystemExit
    from sys.exit(), a KeyboardInterrupt it raised: a real SIGINT ends the worker before Python sees one), raised by
    the script's code and carried out of it as an Exception: every phase then reports it as the script's error, at
    the script's line, where it reports any other exception (`error_record` and `ScriptRaised` unwrap it)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc


def unwrap(exc: BaseException) -> BaseException:
    """The script's own exception: `exc`, or the BaseException a ScriptExit carries."""
    return exc.exc if isinstance(exc, ScriptExit) else exc


def _user_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs): the script's code, whose BaseExceptions leave it as a ScriptExit."""
    try:
        return fn(*args, **kwargs)
    except Exception:
        raise
    except BaseException as exc:
        raise ScriptExit(exc).with_traceback(exc.__traceback__) from None


def _params(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _size_kwarg(fn: Callable[..., Any], size: int | None) -> dict[str, int]:
    return {"size": size} if size is not None and "size" in _params(fn) else {}


def _rank_kwargs(fn: Callable[..., Any]) -> dict[str, int]:
    """rank= and world_size= for a setup/inputs that names them: the process group's when one is formed, else
    torchrun's environment, else 0 and 1 (one process)."""
    params = _params(fn)
    if "rank" not in params and "world_size" not in params:
        return {}
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
    return {k: v for k, v in (("rank", rank), ("world_size", world)) if k in params}


def parse_target(target: str, entry: str | None = None) -> tuple[str, str]:
    """`script.py:name` -> (path, name); --entry wins over the suffix; default entry `step`. The entry is
    checked by `entry_name` (exit 2 for a name no script's function can have)."""
    path, name = target, None
    base, sep, suffix = target.rpartition(":")
    if sep and suffix.isidentifier() and base and not os.path.exists(target):
        path, name = base, suffix
    return path, entry_name(entry if entry is not None else name or "step")


def entry_name(name: str, role: str = "entry") -> str:
    """`name` (NFKC-normalized, as Python reads identifiers) when it can name a function a script defines: a
    Python identifier, no keyword and no dunder (`__init__`, `__class__` are the module's, not the script's);
    else a CgtoolError (usage, exit 2). Every command's entry (--entry, `script.py:name`) passes here, and the
    names of setup and inputs (`role`: "setup", "inputs"; cgtool.check(..., setup="make")) too."""
    import keyword
    import unicodedata

    text = unicodedata.normalize("NFKC", name)
    what = give = f"the script's function to use as {role}()"
    example = short = f'{role}="make_{role}"'
    if role == "entry":
        what, give = "the script's function that runs one iteration", "the function that runs one iteration"
        example, short = "--entry train_step or script.py:train_step", "--entry train_step"
    if not text.isidentifier() or keyword.iskeyword(text):
        raise CgtoolError(f"not a valid {role} name: {name!r}; give the name of {what} (a Python identifier, "
                          f"e.g. {example}).")
    if text.startswith("__") and text.endswith("__"):
        raise CgtoolError(f"no such function {name!r}: names like __init__ and __class__ are Python's own, not a "
                          f"function of the script; give {give} (e.g. {short}).")
    return text


def compile_script(path: str) -> Any:
    """The script's code object; a missing, unreadable or invalid file is a CgtoolError (exit 2)."""
    from cgtool.files.inputs import SCRIPT, read_input

    source = read_input(path, SCRIPT)  # the one reader: a FIFO, device or folder is refused, the size bounded
    try:
        return compile(source, path, "exec")
    except SyntaxError as exc:
        where = f"{exc.filename or path}:{exc.lineno or '?'}"
        if "codec can't decode" in str(exc.msg) or "unknown encoding" in str(exc.msg):
            raise CgtoolError(f"{where}: not readable as Python source in its encoding ({_encoding_problem(exc.msg)}); "
                              "save it as UTF-8 or declare its encoding (# -*- coding: latin-1 -*-).") from None
        line = (exc.text or "").strip()
        raise CgtoolError(f"Syntax error in {where}: {exc.msg}" + (f"\n    {line}" if line else "")) from None
    except UnicodeDecodeError:
        raise CgtoolError(f"{path}: not readable as Python source: it is not UTF-8 text; save it as UTF-8 or declare "
                          "its encoding (# -*- coding: latin-1 -*-).") from None
    except (RecursionError, MemoryError):
        raise CgtoolError(f"{path}: too deeply nested for Python to compile.") from None
    except ValueError as exc:  # not Python source (e.g. NUL bytes)
        raise CgtoolError(f"Cannot read {path} as a Python script: {exc}") from None


def _encoding_problem(msg: str) -> str:
    if "unknown encoding" in msg:
        return msg.split("(")[0].strip()
    return "bytes that are not valid UTF-8"


def contract_names(settings: RunSettings) -> tuple[str | None, str | None]:
    """The names of setup and inputs a job asks for (Job.settings `setup_fn`, `inputs_fn`; cgtool.check with a
    step callable sets them): "setup" and "inputs" by default, None for none."""
    return settings.setup_fn, settings.inputs_fn


def load_script(path: str, entry: str = "step", setup: str | None = "setup", inputs: str | None = "inputs") -> Script:
    """Import the script as a fresh module and resolve its contract functions: `entry`, and setup and inputs by the
    names given (None: the script has none; a name other than the default must exist)."""
    code = compile_script(path)
    path = os.path.abspath(path)
    name = "cgtool_user_" + "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_loader(name, loader=None, origin=path)
    assert spec is not None  # a loader-less spec with an origin is always made
    module = importlib.util.module_from_spec(spec)
    module.__file__ = path
    sys.modules[name] = module
    script_dir = os.path.dirname(os.path.realpath(path))  # as Python takes it: a symlinked script's real folder
    if sys.path[:1] != [script_dir]:  # first, as `python script.py` has it: its own helper modules import the same
        sys.path.insert(0, script_dir)
    try:
        exec(code, module.__dict__)
    except BaseException as exc:  # the user's module-level code raised (sys.exit() and its own BaseExceptions too)
        raise ScriptRaised("load", exc) from None

    step = _entry_function(module, path, entry_name(entry))
    fns = {}
    for label, fn_name, default in (("setup", setup, "setup"), ("inputs", inputs, "inputs")):
        if fn_name is not None:
            fn_name = entry_name(fn_name, label)  # as the entry: an identifier of the script's own globals
        fns[label] = None if fn_name is None else module.__dict__.get(fn_name)
        if fn_name is not None and fn_name != default and fns[label] is None:
            raise CgtoolError(f"{path} has no function `{fn_name}()` (asked for as {label}).\n\n{CONTRACT}")
        if fns[label] is not None and not callable(fns[label]):
            raise CgtoolError(f"{path}: `{fn_name}` is not a function.\n\n{CONTRACT}")
    import inspect

    for label, fn in ((entry, step), (setup or "", fns["setup"]), (inputs or "", fns["inputs"])):
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise CgtoolError(f"{path}: `{label}` is `async def`; cgtool calls it as a plain function, so its body "
                              f"would never run. Make it a plain `def` (a CUDA graph captures synchronous work)."
                              f"\n\n{CONTRACT}")
    return Script(path, entry, step, fns["setup"], fns["inputs"], module, (setup, inputs))


def _entry_function(module: Any, path: str, entry: str) -> Callable[..., Any]:
    """The script's global `entry` when it is a function (or a callable object, e.g. a compiled module); a
    name it lacks, a class, a module or a plain value is a CgtoolError (usage, exit 2) that says which."""
    import types

    step = module.__dict__.get(entry, _MISSING)  # its own globals: never an attribute every module has
    what = ("a class" if isinstance(step, type) else "a module" if isinstance(step, types.ModuleType)
            else None if callable(step) or step is _MISSING else f"a value of type {type(step).__name__}")
    if what:
        raise CgtoolError(f"{path}: `{entry}` is {what}, not a function; name the function that runs one iteration."
                          f"\n\n{CONTRACT}")
    if step is _MISSING:
        have = [n for n in ("setup", "inputs", "step") if callable(module.__dict__.get(n))]
        found = f" It defines {', '.join(have)}." if have else ""
        raise CgtoolError(f"{path} has no function `{entry}()`.{found}\n\n{CONTRACT}")
    return step


_MISSING = object()


class ScriptRaised(Exception):
    """The user's code raised in a phase (load, setup, inputs, step); carries the original exception."""

    def __init__(self, phase: str, exc: BaseException) -> None:
        exc = unwrap(exc)
        super().__init__(f"{phase}: {type(exc).__name__}: {exc}")
        self.phase = phase
        self.exc = exc

    def user_traceback(self) -> str:
        """The traceback cut to the user's frames, then the exception line."""
        from cgtool.script.frames import user_frames_of_traceback

        frames = user_frames_of_traceback(self.exc.__traceback__)
        lines = [f'  File "{f.file}", line {f.line}, in {f.function}\n    {f.source}' for f in frames]
        lines += traceback.format_exception_only(type(self.exc), self.exc)
        return "\n".join(line.rstrip("\n") for line in lines)
