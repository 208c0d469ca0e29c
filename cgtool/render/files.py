"""Write an output file without destroying anything: a regular file (or a new path) is replaced atomically,
a device, FIFO or socket is written in place, and a symlink's target, never the link, receives the output."""

from __future__ import annotations

import os
import stat
import tempfile

from cgtool.errors import CgtoolError, ExitCode


def write_output(path: str, data: str | bytes) -> str:
    """Write `data` to `path` and return the file that received it (a symlink's target).

    A regular file or a new path gets a temporary file beside it, synced, then renamed over it: readers
    never see half a file, and a failed write (a full disk) leaves the old file as it was. The new file
    has the old file's mode, or the umask's (0666 & ~umask) for a new path. A character device
    (/dev/null, /dev/stdout), a FIFO or a socket is opened and written in place, as a shell's `>` would,
    so it is never replaced by a plain file. Any failure is a CgtoolError (exit 3) naming the path.
    """
    if not path:
        raise CgtoolError("Cannot write an output file with an empty name.", ExitCode.USAGE)
    raw = data.encode() if isinstance(data, str) else data
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


def write_result(path: str, data: str | bytes, failed: bool) -> bool:
    """write_output, except that a failed run never replaces an existing file (a saved report, a CI baseline):
    False when the file was kept as it was (the caller says so); a new path is written either way."""
    if failed and _stat(path) is not None:
        return False
    write_output(path, data)
    return True


KEPT_NOTE = "{path} was kept as it was: this run failed, and its output would replace a saved one."


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
        with open(path, "wb") as fh:  # blocks until a FIFO has a reader, as a shell's `>` does
            fh.write(raw)
    except OSError as exc:
        raise _error(path, exc) from None


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
