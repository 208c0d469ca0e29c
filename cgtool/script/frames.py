"""Find the user's own frames in a stack or traceback (not torch, not cgtool, not the stdlib)."""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
import types

from cgtool.model.frame import Frame

# The cgtool package itself (never the user's code).
CGTOOL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _library_dirs() -> tuple[str, ...]:
    dirs = {CGTOOL_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path) + os.sep)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        dirs.add(os.path.join(os.path.abspath(prefix), "lib") + os.sep)
    for path in sys.path:
        if path.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.abspath(path) + os.sep)
    return tuple(sorted(dirs))


_LIB_DIRS = _library_dirs()
_cache: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    """True for a file of the user's (their script and their own modules)."""
    hit = _cache.get(filename)
    if hit is None:
        if filename.startswith("<") or not filename:
            hit = False
        else:
            path = os.path.abspath(filename)
            # torch.compile's generated code (inductor's cache, /tmp/torchinductor_<user>/...) is nobody's source
            hit = not path.startswith(_LIB_DIRS) and "site-packages" not in path and "torchinductor_" not in path
        _cache[filename] = hit
    return hit


def make_frame(filename: str, lineno: int, function: str) -> Frame:
    return Frame(filename, lineno, function, linecache.getline(filename, lineno).strip())


def def_frame(code: types.CodeType) -> Frame:
    """The `def` line of a function (its code's first line is its first decorator's: step down to the `def`)."""
    line = code.co_firstlineno
    for n in range(line, line + 20):
        if linecache.getline(code.co_filename, n).lstrip().startswith(("def ", "async def ")):
            line = n
            break
    return make_frame(code.co_filename, line, code.co_name)


def user_frames_of_traceback(tb: types.TracebackType | None) -> tuple[Frame, ...]:
    """The user's frames in a traceback, outermost first (the last one is where it failed)."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            out.append(make_frame(code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return tuple(out)


def innermost_user_frame(start: types.FrameType | None = None) -> Frame | None:
    """The innermost frame of the user's code on the current stack (walking outward)."""
    f: types.FrameType | None = start or sys._getframe(1)
    while f is not None:
        code = f.f_code
        if is_user_file(code.co_filename):
            return make_frame(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return None
