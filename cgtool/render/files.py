"""The one writer of every output file, destroying nothing: a regular file (or a new path) is replaced atomically
(a temporary file in the same folder, synced, renamed over it); a device or FIFO the user named is written in place
(a FIFO only once a reader has it open: FIFO_WAIT_S, then a clear error); a symlink the user named is followed (its
target receives the output, as a shell's `>` does), but a symlink where cgtool picks the name (report.json in
--out) is replaced by a file, so no other file is ever written through it; and the output of a run that did not
complete (failed, timed out, interrupted) never replaces an existing file: it goes beside it (save_result)."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import time

from cgtool.errors import CgtoolError, ExitCode


FIFO_WAIT_S = 10.0  # a FIFO output with no reader: how long cgtool waits for one before it fails (exit 3)


def write_output(path: str, data: str | bytes, follow_links: bool = True) -> str:
    """Write `data` to `path` and return the file that received it (a symlink's target).

    `follow_links=False` is for names cgtool picks itself (the files in capture's --out): whatever is there
    but a folder (a symlink, a FIFO, a device node) is replaced by a regular file, atomically, and nothing
    outside the folder is written.

    A regular file or a new path gets a temporary file beside it, synced, then renamed over it: readers
    never see half a file, and a failed write (a full disk) leaves the old file as it was. The new file
    has the old file's mode, or the umask's (0666 & ~umask) for a new path. A character device
    (/dev/null, /dev/stdout), a FIFO or a socket is opened and written in place, as a shell's `>` would,
    so it is never replaced by a plain file. Any failure is a CgtoolError (exit 3) naming the path.
    """
    if not path:
        raise CgtoolError("Cannot write an output file with an empty name.", ExitCode.USAGE)
    raw = data.encode() if isinstance(data, str) else data
    if not follow_links:
        return _write_own(path, raw)
    st = _stat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CgtoolError(f"Cannot write {path}: it is a folder; give a file name.", ExitCode.USAGE)
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(path, raw)
        return path
    if st is not None and not os.access(path, os.W_OK):  # read-only: refused, as a shell's `>` would
        raise CgtoolError(f"Cannot write {path}: permission denied.", ExitCode.ENVIRONMENT)
    real = os.path.realpath(path)
    if st is not None and not _same_file(real, st):  # e.g. /proc/self/fd/1 onto a file: no name to rename over
        _write_in_place(path, raw)
        return path
    try:
        _replace(real, raw, st)
    except PermissionError as exc:
        if st is None:
            raise _error(path, exc) from None
        _write_in_place(real, raw)  # a writable file in a folder the user may not write: in place, not lost
    return real


def failed_path(path: str) -> str:
    """Where a run that did not complete writes instead of `path`: report.json -> report.failed.json."""
    folder, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    return os.path.join(folder, f"{stem or name}.failed{ext if stem else ''}")


KEPT_NOTE = "{path} was kept as it was: this run did not complete; its output is in {other}."


def save_result(path: str, data: str | bytes, complete: bool) -> str:
    """write_output to a file the user named (lint -o, bench --out/--plot), except that the output of a run that
    did not complete (failed, timed out, interrupted) never replaces an existing regular file (a saved report, a
    CI baseline): it goes to failed_path(path) beside it, and one line on stderr says so. Returns the file written."""
    diverted = not complete and _holds_a_file(path)
    written = write_output(failed_path(path) if diverted else path, data)
    if diverted:
        from cgtool.render.console import console

        console(stderr=True).print(KEPT_NOTE.format(path=path, other=written), soft_wrap=True, markup=False)
    return written


def _holds_a_file(path: str) -> bool:
    """True when `path` names (through symlinks) an existing regular file, whose content a write would replace;
    a device or FIFO holds none."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _write_own(path: str, raw: bytes) -> str:
    """A file at a name cgtool picked: anything there but a folder is replaced (a symlink itself, not its target)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _error(path, exc) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CgtoolError(f"Cannot write {path}: it is a folder; give a file name.", ExitCode.USAGE)
    keep = st if st is not None and stat.S_ISREG(st.st_mode) else None  # a link's or FIFO's mode is not a file's
    if keep is not None and not os.access(path, os.W_OK):  # read-only: refused, as for a file the user named
        raise CgtoolError(f"Cannot write {path}: permission denied.", ExitCode.ENVIRONMENT)
    try:
        _replace(path, raw, keep)
    except PermissionError as exc:
        raise _error(path, exc) from None
    return path


def check_writable(path: str, option: str) -> None:
    """Fail before any work when `path` cannot be written: a read-only file, device or FIFO, or a folder
    that is missing or read-only for a new file."""
    if not path:
        raise CgtoolError(f"{option} needs a file name, not an empty one.", ExitCode.USAGE)
    st = _stat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CgtoolError(f"Cannot write {option} {path}: it is a folder; give a file name.", ExitCode.USAGE)
    if st is not None:
        if not os.access(path, os.W_OK):
            raise CgtoolError(f"Cannot write {option} {path}: permission denied.", ExitCode.ENVIRONMENT)
        return
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise CgtoolError(f"Cannot write {option} {path}: the folder {folder} does not exist or is not writable.",
                          ExitCode.ENVIRONMENT)


def refuse_input(path: str, option: str, inputs: dict[str, str]) -> None:
    """CgtoolError (exit 2) when the output `path` is one of the run's inputs ({path: what it is}): writing it
    would destroy what the run reads. Compared by file identity, so links and `./a` spellings are caught."""
    st = _stat(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        return
    for other, what in inputs.items():
        try:
            same = os.path.samefile(path, other)
        except OSError:
            continue
        if same:
            raise CgtoolError(f"{option} {path} is {what} of this run; writing it would destroy it. "
                              f"Give {option} another file.", ExitCode.USAGE)


def _stat(path: str) -> os.stat_result | None:
    """os.stat (through symlinks); None for a path (or a dangling link's target) that does not exist."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _error(path, exc) from None


def _replace(real: str, raw: bytes, old: os.stat_result | None) -> None:
    folder = os.path.dirname(real) or "."
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(real) + ".", suffix=".tmp")
    except PermissionError:
        raise  # write_output may still write the file in place
    except OSError as exc:
        raise _error(real, exc) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if old is not None:
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
            if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
                os.chown(tmp, old.st_uid, old.st_gid)  # root rewriting a user's file keeps it theirs
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, PermissionError):
            raise _error(real, exc) from None
        raise


def _write_in_place(path: str, raw: bytes) -> None:
    try:
        fd = _open_in_place(path)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
    except OSError as exc:
        raise _error(path, exc) from None


def _open_in_place(path: str) -> int:
    """An fd for writing a device or FIFO in place. A FIFO is opened without blocking: with no reader the open
    fails (ENXIO) and is tried again until FIFO_WAIT_S have passed, then a CgtoolError (exit 3) says so."""
    flags = os.O_WRONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        fifo = False
    if not fifo:
        return os.open(path, flags | os.O_CREAT | os.O_TRUNC, 0o666)
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, flags | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise CgtoolError(f"Cannot write {path}: no process is reading this FIFO (waited {FIFO_WAIT_S:g} s); "
                                  "start its reader first.", ExitCode.ENVIRONMENT) from None
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)  # a reader is there: write as a shell's `>` does, at the reader's pace
        return fd


def _same_file(real: str, st: os.stat_result) -> bool:
    try:
        other = os.stat(real)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _umask() -> int:
    """The process's umask, read without changing it where Linux allows (os.umask can only set it)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _error(path: str, exc: OSError) -> CgtoolError:
    return CgtoolError(f"Cannot write {path}: {exc.strerror or exc}", ExitCode.ENVIRONMENT)
