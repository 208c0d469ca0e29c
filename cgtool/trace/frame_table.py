"""Where an op comes from: the user's frames (interned), the library frames on the way, and the frames of
cgtool's and torch's interposition machinery that are never anyone's line."""

from __future__ import annotations

import sys
import types

from cgtool.model.frame import Frame
from cgtool.script.frames import CGTOOL_DIR, is_user_file, make_frame

SKIPPED = -2  # FrameTable.locate: the op runs under setup()/inputs(), not under the step


class FrameTable:
    """Interns user frames by (code object, line): the per-op frame lookup is a few dict hits."""

    def __init__(self, frames: list[Frame]) -> None:
        self.frames = frames
        self._index: dict[tuple[types.CodeType, int], int] = {}
        self._user: dict[types.CodeType, bool] = {}
        self.anchor: types.FrameType | None = None  # the harness frame an iteration runs under; walks stop there
        self.skip_codes: frozenset[types.CodeType] = frozenset()  # callers whose ops are not the step's
        self._glue: dict[types.CodeType, bool] = {}
        self._hot_frame: types.FrameType | None = None
        self._hot_lasti = -1
        self._hot_hit = (-1, -1)
        self._hot_issuer = -1
        self.issuer = -1  # after locate(): the library frame that issued the op (index), -1 when the user's own
        self._last_frame: types.FrameType | None = None
        self._last_line = -1
        self._last_hit = (-1, -1)

    def is_user(self, code: types.CodeType) -> bool:
        u = self._user.get(code)
        if u is None:
            u = self._user[code] = is_user_file(code.co_filename)
        return u

    def index(self, f: types.FrameType) -> int:
        code = f.f_code
        key = (code, f.f_lineno)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.frames)
            self.frames.append(make_frame(code.co_filename, key[1], code.co_name))
        return i

    def locate(self, f: types.FrameType | None) -> tuple[int, int]:
        """(innermost, outermost) user frame indices walking out from f, stopping at the anchor (the
        harness: its own frames are never the user's, even when its file is not in site-packages);
        (SKIPPED, SKIPPED) under a caller in skip_codes. Sets `issuer`: the frame that issued the op
        when it is a library's (interned like user frames, so a finding can name it).

        Ops issued from the same Python frame at the same instruction (all of backward, or an op and
        its decomposition) reuse the last walk: the cache holds that frame, so its id is not reused."""
        glue = self._glue
        while f is not None:  # cgtool's and torch's interposition frames
            code = f.f_code
            g = glue.get(code)
            if g is None:
                path = code.co_filename.replace("\\", "/")
                g = glue[code] = any(p in path for p in _INTERPOSITION_PATHS)
            if not g:
                break
            f = f.f_back
        if f is None:
            self.issuer = -1
            return -1, -1
        lasti = f.f_lasti
        if f is self._hot_frame and lasti == self._hot_lasti:
            self.issuer = self._hot_issuer
            return self._hot_hit
        hit = self._walk(f)
        code = f.f_code
        u = self._user.get(code)
        if u is None:
            u = self.is_user(code)
        self.issuer = -1 if u or hit[0] < 0 else self.index(f)
        self._hot_frame, self._hot_lasti, self._hot_hit, self._hot_issuer = f, lasti, hit, self.issuer
        return hit

    def forget(self) -> None:
        """Drop the cached frames (end of an iteration): they keep their locals alive."""
        self._hot_frame = self._last_frame = None

    def _walk(self, f: types.FrameType | None) -> tuple[int, int]:
        user = self._user
        anchor = self.anchor
        while f is not None and f is not anchor:
            code = f.f_code
            u = user.get(code)
            if u is None:
                u = self.is_user(code)
            if u:
                break
            f = f.f_back
        if f is None or f is anchor:
            return -1, -1
        lineno = f.f_lineno
        if f is self._last_frame and lineno == self._last_line:  # consecutive ops of one user line
            return self._last_hit
        inner = outer = f
        g = f.f_back
        skip = self.skip_codes
        hit: tuple[int, int] | None = None
        while g is not None and g is not anchor:
            code = g.f_code
            if code in skip:  # e.g. under Script.call_inputs: the harness made inputs inside an iteration
                hit = (SKIPPED, SKIPPED)
                break
            u = user.get(code)
            if u is None:
                u = self.is_user(code)
            if u:
                outer = g
            g = g.f_back
        if hit is None:
            i = self.index(inner)
            hit = (i, (i if outer is inner else self.index(outer)))
        self._last_frame, self._last_line, self._last_hit = f, lineno, hit
        return hit

    def library_path(self, f: types.FrameType | None, limit: int = 8) -> tuple[str, ...]:
        """The library frames between f and the innermost user frame, nearest the user first, each as
        "pkg/module.py:LINE:function" ("transformers/masking_utils.py:755:find_packed_sequence_indices"),
        skipping cgtool's and torch's interposition frames. A deep stack keeps its ends: the frames nearest
        the user and the innermost one, which issued the op."""
        out: list[str] = []
        while f is not None and not self.is_user(f.f_code):
            path = f.f_code.co_filename.replace("\\", "/")
            if not any(skip in path for skip in _INTERPOSITION_PATHS):
                out.append(f"{short_path(path)}:{f.f_lineno}:{f.f_code.co_name}")
            f = f.f_back
        out.reverse()
        return tuple(out if len(out) <= limit else out[:limit - 1] + out[-1:])


def short_path(path: str) -> str:
    """A library file as people name it: from its package down ("transformers/masking_utils.py",
    "torch/nn/modules/module.py"); the file name alone when no package folder is found."""
    for marker in ("/site-packages/", "/dist-packages/"):
        cut = path.rfind(marker)
        if cut >= 0:
            return path[cut + len(marker):]
    cut = path.rfind("/torch/")
    return path[cut + 1:] if cut >= 0 else path.rsplit("/", 1)[-1]


def describe_library_frame(entry: str) -> str:
    """"pkg/mod.py:12:fn" as "pkg/mod.py:12 in fn" (older two-part entries "pkg/mod.py:fn" as they are)."""
    parts = entry.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return f"{parts[0]}:{parts[1]} in {parts[2]}"
    return entry


# Frames between an op and the code that issued it: cgtool's own, and torch's interposition machinery.
_INTERPOSITION_PATHS = (CGTOOL_DIR.replace("\\", "/"), "torch/utils/_python_dispatch.py", "torch/overrides.py", "torch/_dynamo/",
                        "torch/_compile.py", "torch/utils/_contextlib.py")


def caller_frame(depth: int = 2) -> types.FrameType | None:
    try:
        return sys._getframe(depth)
    except ValueError:
        return None
