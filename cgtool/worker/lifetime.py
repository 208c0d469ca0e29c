"""Nothing cgtool starts outlives it: the process tree from /proc, Linux's child subreaper (orphans of a
killed process come back to us, new sessions included, instead of going to PID 1), a watch that ends a
process and everything below it when its parent dies (SIGKILL of cgtool), and SIGTERM/SIGHUP turned into the
same clean stop as Ctrl-C (workers stopped, temporary folders removed, the report printed)."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, NoReturn, TypeVar

from cgtool.errors import CTRL_C

if TYPE_CHECKING:
    import subprocess

_PR_SET_CHILD_SUBREAPER = 36
_workers: set[int] = set()  # pids of the workers (launchers) this process started and has not reaped
_stopped_by: list[int] = []  # the signal that asked this process to stop (SIGTERM, SIGHUP)


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        return False


def become_subreaper() -> bool:
    """Orphans below this process are re-parented to it (Linux 3.4+), so it can find and end them."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, grandchildren, ...), from /proc; [] where /proc is missing."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_descendants(pid: int | None = None, rounds: int = 20) -> None:
    """SIGKILL everything below `pid` (this process by default), again until nothing is left: a killed
    process's own children come back to a subreaper and are found on the next round."""
    me = os.getpid() if pid is None else pid
    for _ in range(rounds):
        found = descendants(me)
        if not found:
            return
        for p in found:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        if me == os.getpid():
            _reap_children()
        time.sleep(0.01)


def exit_now(code: int) -> NoReturn:
    """End this process with `code` after its descendants: flush Python's streams, skip interpreter teardown (a
    half-stopped torch or NCCL can hang in it)."""
    kill_descendants()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _reap_children() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_with_parent(folders: tuple[str, ...] = (), poll_s: float = 0.2) -> None:
    """In a worker, launcher or rank: when the process that started it goes away (cgtool killed with
    SIGKILL), kill everything below this process, remove cgtool's temporary `folders` (the parent can no
    longer), then end this process. A subreaper finds what the script started in new sessions too."""
    parent = os.getppid()
    become_subreaper()
    # (not PR_SET_PDEATHSIG: it fires when the parent *thread* ends, and lint and torch's launcher start
    # processes from threads that may end first)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        kill_descendants()
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        os._exit(137)

    threading.Thread(target=watch, name="cgtool-parent-watch", daemon=True).start()


# The parent's side: workers it started, orphans that came back to it, and the stop signals.

_spawn_lock = threading.Lock()  # a worker started is a worker known: reaped() never sees one in between
P = TypeVar("P", bound="subprocess.Popen[Any]")


def start(spawn: Callable[[], P]) -> P:
    """Start a worker (`spawn()` returns its Popen) and know it as one, together: lint's threads start workers
    while another thread's reaped() ends the children it does not know. Between fork and started, CI once saw
    a worker taken for an orphan: killed and reaped there, its own thread read "exit status 0, no result"."""
    with _spawn_lock:
        proc = spawn()
        _workers.add(proc.pid)
        return proc


def reaped(pid: int) -> None:
    """The worker `pid` was killed and reaped: end what it left behind that came back to this process."""
    with _spawn_lock:
        _workers.discard(pid)
        for child in _own_children():
            if child not in _workers:
                kill_descendants(child)
                _kill_and_reap(child)


def _kill_and_reap(pid: int, bound_s: float = 5.0) -> None:
    """SIGKILL `pid` and reap it, waiting at most `bound_s` (a process stuck in the kernel is left unreaped:
    reaped() holds the lock that starts workers)."""
    try:
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + bound_s
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.01)
    except OSError:
        pass


def _own_children() -> list[int]:
    me = os.getpid()
    out = []
    for p in descendants(me):
        try:
            with open(f"/proc/{p}/stat") as fh:
                if int(fh.read().rsplit(")", 1)[1].split()[1]) == me:
                    out.append(p)
        except (OSError, ValueError):
            continue
    return out


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP stop cgtool as Ctrl-C does (KeyboardInterrupt in the main thread): workers are
    stopped, temporary folders removed, and what was found so far is printed."""
    def handler(signum: int, _frame: object) -> None:
        if not _stopped_by:
            _stopped_by.append(signum)
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def stop_name() -> str:
    """How this run was stopped, for messages (errors.interrupted) and the exit status (errors.interrupted_status):
    "Ctrl-C", "SIGTERM" or "SIGHUP"."""
    return signal.Signals(_stopped_by[0]).name if _stopped_by else CTRL_C
