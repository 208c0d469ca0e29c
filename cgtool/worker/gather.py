"""Each rank's result to rank 0 through torch.distributed's own rendezvous store, under the user's torchrun or
SLURM: no shared file system.

torchrun's agent hosts a TCPStore that every worker reaches at MASTER_ADDR:MASTER_PORT (it says so with
TORCHELASTIC_USE_AGENT_STORE=True; the default for its c10d rendezvous, `--standalone` included). When a rank's
child has ended, its cgtool process puts what the child left in its own temp folder (its report, the tail of its
output, its events) under one key; rank 0's cgtool waits for every rank's key, writes them into its own run folder
and merges as before. Without an agent store (a launcher of its own), the ranks of one host share a temp folder
instead (docs/distributed.md).
"""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from typing import Any

OUTPUT_TAIL_CHARS = 4000


def agent_store(timeout_s: float) -> Any | None:
    """A client of the launcher's store, or None when the launcher hosts none."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or "MASTER_PORT" not in os.environ:
        return None
    try:
        from torch.distributed import TCPStore

        return TCPStore(os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ["MASTER_PORT"]), is_master=False,
                        timeout=timedelta(seconds=max(5.0, timeout_s)))
    except Exception:  # noqa: BLE001 - unreachable: the folder on this host is what is left
        return None


def _key(rank: int) -> str:
    run = os.environ.get("TORCHELASTIC_RUN_ID", "none")
    return f"cgtool-result/{run}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/{rank}"


def _read(path: str, tail: int | None = None) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[-tail:].decode(errors="replace") if tail else data.decode(errors="replace")


def push(store: Any, rank: int, run_dir: str, events: list[dict[str, Any]], code: int | None) -> int:
    """Put this rank's result (as its child left it in run_dir) in the store; the bytes it took."""
    payload = json.dumps({"result": _read(os.path.join(run_dir, f"rank{rank}.json")),
                          "log": _read(os.path.join(run_dir, f"rank{rank}.log"), OUTPUT_TAIL_CHARS),
                          "events": events, "code": code})
    store.set(_key(rank), payload)
    return len(payload.encode())


def gather(store: Any, world: int, run_dir: str, deadline: float) -> dict[int, dict[str, Any]]:
    """Rank 0: every rank's result from the store (until `deadline`, time.monotonic()), written into run_dir as
    that rank's own files (rank<r>.json, rank<r>.log); rank → {"events", "code"} of those that arrived."""
    got: dict[int, dict[str, Any]] = {}
    while time.monotonic() < deadline and len(got) < world:
        for r in range(world):
            if r not in got and store.check([_key(r)]):
                got[r] = json.loads(store.get(_key(r)).decode())
        if len(got) < world:
            time.sleep(0.1)
    for r, payload in got.items():
        for name, text in ((f"rank{r}.json", payload.get("result")), (f"rank{r}.log", payload.get("log"))):
            if text is not None:
                with open(os.path.join(run_dir, name), "w", encoding="utf-8") as fh:
                    fh.write(text)
    return got


def remove_own_files(run_dir: str, rank: int) -> None:
    """A rank other than 0 after pushing: its files in this host's folder, and the folder once empty."""
    for name in os.listdir(run_dir) if os.path.isdir(run_dir) else ():
        if name.startswith(f"rank{rank}.") or name.endswith(f".rank{rank}") or f".rank{rank}." in name:
            try:
                os.remove(os.path.join(run_dir, name))
            except OSError:
                pass
    try:
        os.rmdir(run_dir)
    except OSError:
        pass
