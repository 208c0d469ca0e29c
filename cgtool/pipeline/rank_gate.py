"""The ranks' meeting point after capture, through the process group's store (the rendezvous TCPStore every
rank reaches, on any host), and files in the run folder (what the launcher on one host reads).

Each rank writes whether its capture worked; a rank whose capture worked waits (bounded) for the others
before the phases that run collectives (replay check, timing): when a peer failed, waiting on its
collectives would hang, so those phases are skipped and the rank still writes its report. A rank that
failed lingers (bounded) until the peers past the meeting point have written their reports, so that
the launcher, which stops every rank once one exits with an error, does not cut them short.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

from cgtool.model.report_parts import PEERS_NOT_READY, Skip


class RankGate:
    def __init__(self, run_dir: str, rank: int, world_size: int, timeout_s: float,
                 diverged: Callable[[], str | None] | None = None) -> None:
        self.run_dir, self.rank, self.world_size, self.timeout_s = run_dir, rank, world_size, timeout_s
        self.diverged = diverged  # while waiting: a peer entered a collective this rank never issues (rank_sequence)

    def _path(self, what: str, rank: int) -> str:
        return os.path.join(self.run_dir, f"{what}.rank{rank}")

    @staticmethod
    def _store() -> Any:
        try:
            import torch.distributed as dist

            return dist.distributed_c10d._get_default_store() if dist.is_initialized() else None
        except Exception:  # noqa: BLE001 - no store: the files alone (one host)
            return None

    def _write(self, what: str, data: dict[str, Any]) -> None:
        tmp = self._path(what, self.rank) + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, self._path(what, self.rank))
        store = self._store()
        if store is not None:
            try:
                store.set(f"cgtool-gate/{what}/{self.rank}", json.dumps(data))
            except Exception:  # noqa: BLE001 - the store gone (a peer's host ended): the file still says it
                pass

    def _read(self, what: str, rank: int) -> dict[str, Any] | None:
        store = self._store()
        if store is not None:
            try:
                key = f"cgtool-gate/{what}/{rank}"
                if store.check([key]):
                    return json.loads(store.get(key).decode())
            except Exception:  # noqa: BLE001
                pass
        try:
            with open(self._path(what, rank)) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def arrive(self, ok: bool, where: str = "") -> Skip | None:
        """Say how this rank's capture went; with ok, wait for the peers. A reason to skip the phases that
        run collectives, or None when every rank captured."""
        self._write("gate", {"ok": ok, "where": where})
        if not ok:
            return None
        deadline = time.monotonic() + self.timeout_s
        peers = [r for r in range(self.world_size) if r != self.rank]
        while True:
            apart = self.diverged() if self.diverged is not None else None
            if apart:
                return Skip(PEERS_NOT_READY, f"replay check and timing: {apart}")
            seen = {r: self._read("gate", r) for r in peers}
            failed = [f"rank {r} ({d.get('where') or 'capture failed'})" for r, d in seen.items() if d and not d.get("ok")]
            if failed:
                return Skip(PEERS_NOT_READY, f"replay check and timing: {', '.join(failed)}; the collectives of "
                            "those phases would wait forever on it")
            missing = [r for r, d in seen.items() if d is None]
            if not missing:
                return None
            if time.monotonic() > deadline:
                return Skip(PEERS_NOT_READY, f"replay check and timing: rank(s) {', '.join(map(str, missing))} did "
                            f"not finish capture within {self.timeout_s:g} s (stuck, most likely in a collective of "
                            "warmup)")
            time.sleep(0.05)

    def done(self) -> None:
        """This rank's report is written."""
        self._write("done", {})

    def linger(self, bound_s: float = 15.0) -> None:
        """Before a failed rank exits: wait while peers that reached the meeting point write their reports."""
        deadline = time.monotonic() + bound_s
        quiet_since = time.monotonic()
        peers = [r for r in range(self.world_size) if r != self.rank]
        while time.monotonic() < deadline:
            pending = [r for r in peers if self._read("done", r) is None]
            if not pending:
                return
            if any(self._read("gate", r) is not None for r in pending):
                quiet_since = time.monotonic()  # someone is past capture and still writing: wait for it
            elif time.monotonic() - quiet_since > 2.0:
                return  # the others are stuck before capture (or slower): the launcher stops them
            time.sleep(0.05)


_GATE: list[RankGate | None] = [None]


def install(gate: RankGate | None) -> None:
    _GATE[0] = gate


def after_capture(ok: bool, where: str = "") -> Skip | None:
    """Called by the GPU pipeline after capture; no-op (None) outside a distributed run."""
    gate = _GATE[0]
    return None if gate is None else gate.arrive(ok, where)
