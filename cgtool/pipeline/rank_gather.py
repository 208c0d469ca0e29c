"""Each rank's files to rank 0 through the process group's store, under the user's torchrun or SLURM (several
hosts, each with its own temp folder): no shared file system.

A rank other than 0, once its result is written, puts what it left in its run folder (its result, the tail of its
output, its events) under one key of the store its process group already uses (the rendezvous TCPStore); rank 0,
after its own result, waits for every rank's key and writes those files into `gathered/` in its own run folder,
with the `done.rank<r>` mark its cgtool waits for. The parent processes then read the folder as on one host
(cgtool/worker/distributed.py). Active when the parent asks for it (CGTOOL_GATHER=store: under the user's own
launcher); cgtool's own `--nproc-per-node` ranks share one folder and need none of it.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

OUTPUT_TAIL_CHARS = 4000
FILES = ("rank{r}.json", "rank{r}.events.jsonl", "rank{r}.log")


def wanted() -> bool:
    return os.environ.get("CGTOOL_GATHER") == "store"


def _store() -> Any:
    try:
        import torch.distributed as dist

        return dist.distributed_c10d._get_default_store() if dist.is_initialized() else None
    except Exception:  # noqa: BLE001 - no group: nothing to hand over through
        return None


def _read(path: str, tail: int | None = None) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return (data[-tail:] if tail else data).decode(errors="replace")


def push(rank: int, run_dir: str) -> int:
    """This rank's files to the store; the bytes sent (0: no store). Marks run_dir/pushed.rank<r> when done."""
    store = _store()
    if store is None:
        return 0
    payload = json.dumps({name.format(r=rank): _read(os.path.join(run_dir, name.format(r=rank)),
                                                     OUTPUT_TAIL_CHARS if name.endswith(".log") else None)
                          for name in FILES})
    store.set(f"cgtool-result/{rank}", payload)
    with open(os.path.join(run_dir, f"pushed.rank{rank}"), "w"):
        pass
    return len(payload.encode())


def gather(world: int, run_dir: str, timeout_s: float) -> list[int]:
    """Rank 0: every other rank's files from the store into run_dir/gathered (until `timeout_s` passes); the ranks
    that came."""
    store = _store()
    if store is None:
        return []
    into = os.path.join(run_dir, "gathered")  # apart from the folder a rank on this host may be cleaning up
    os.makedirs(into, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    pending = set(range(1, world))
    while pending and time.monotonic() < deadline:
        for r in sorted(pending):
            if store.check([f"cgtool-result/{r}"]):
                files = json.loads(store.get(f"cgtool-result/{r}").decode())
                for name, text in files.items():
                    if text is not None:
                        with open(os.path.join(into, name), "w", encoding="utf-8") as fh:
                            fh.write(text)
                with open(os.path.join(into, f"done.rank{r}"), "w"):
                    pass
                pending.discard(r)
        if pending:
            time.sleep(0.1)
    return [r for r in range(1, world) if r not in pending]
