"""Divergence found as it happens: the ranks compare their collectives through the store they already share.

Every rank publishes each collective it is about to issue (before it runs) under its sequence number in the
process group's own key-value store (the TCPStore of the rendezvous, `torch.distributed`'s default store), and
reads what the peers published under the same number. The first number where the ranks disagree — another
op, another phase or step iteration, other sizes for a collective whose sizes must match — is where a real run
deadlocks (or, with equal sizes, silently pairs the wrong calls until one rank runs out). The rank that sees it
raises CollectivesDiverged inside its own call, at the user's line; its process ends with an error and the
launcher stops the others (which are blocked in NCCL or gloo). A rank that finished warmup and capture
publishes how many collectives it issued; a peer that enters a collective past that count is one the rank
never joins ("they reach capture first"), found by either side: the peer at its call, the rank while it waits
at the meeting point after capture (`RankGate`). Only the phases every rank runs in lockstep are compared
(setup, warmup, capture); point-to-point calls (send/recv) differ across ranks by design and are not compared.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable

from cgtool.trace.dist_watch import CollectivesDiverged

PREFIX = "cgtool-seq"
POINT_TO_POINT = ("send", "recv", "isend", "irecv", "batch_isend_irecv")
# collectives whose tensors must have the same sizes on every rank (all_to_all and the object variants need not)
SAME_SIZES = ("all_reduce", "broadcast", "reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
              "all_gather_single", "reduce_scatter_single", "barrier")
COMPARED_PHASES = ("setup", "warmup", "capture")


def signature(rec: dict[str, Any]) -> dict[str, Any]:
    frame = rec.get("frame") or {}
    return {"op": rec["op"], "phase": rec["phase"], "iteration": rec.get("iteration", -1),
            "detail": rec.get("detail", ""), "file": frame.get("file"), "line": frame.get("line")}


def differs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if (a["op"], a["phase"], a["iteration"]) != (b["op"], b["phase"], b["iteration"]):
        return True
    return a["op"] in SAME_SIZES and a["detail"] != b["detail"]


def describe(sig: dict[str, Any] | None, done: int | None = None) -> str:
    """`all_reduce(float32[16,256] SUM) at x.py:19 in warmup iteration 0`, or what a rank that issues none did."""
    if sig is None:
        return (f"finished warmup and capture after {done} collective{'s' if done != 1 else ''} and never calls it"
                if done is not None else "has not called it")
    where = f" at {os.path.basename(sig['file'] or '')}:{sig['line']}" if sig.get("line") else ""
    when = "the capture iteration" if sig["phase"] == "capture" else (
        f"{sig['phase']} iteration {sig['iteration']}" if sig["iteration"] >= 0 else sig["phase"])
    detail = f"({sig['detail']})" if sig.get("detail") else ""
    return f"{sig['op']}{detail}{where} in {when}"


class SequenceCheck:
    """This rank's side of the comparison; `record(event)` puts the divergence in the rank's events file."""

    def __init__(self, rank: int, world_size: int, record: Callable[[dict[str, Any]], None]) -> None:
        self.rank, self.world_size, self.record = rank, world_size, record
        self.count = 0  # this rank's compared collectives so far
        self.closed = False  # past the meeting point: the phases after it are not compared
        self.found: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._store: Any = None

    def store(self) -> Any:
        if self._store is None:
            try:
                import torch.distributed as dist

                if dist.is_initialized():
                    self._store = dist.distributed_c10d._get_default_store()
            except Exception:  # noqa: BLE001 - no store, no comparison (the merge still compares the records)
                self._store = None
        return self._store

    def _get(self, key: str) -> Any:
        store = self.store()
        if store is None or not store.check([key]):
            return None
        return json.loads(store.get(key).decode())

    def _peers(self) -> list[int]:
        return [r for r in range(self.world_size) if r != self.rank]

    def on_collective(self, rec: dict[str, Any]) -> None:
        """Called before each collective runs; raises CollectivesDiverged where the ranks part."""
        if self.closed or rec.get("phase") not in COMPARED_PHASES or rec.get("op") in POINT_TO_POINT:
            return
        with self._lock:
            store = self.store()
            if store is None or self.world_size < 2:
                return
            n, mine = self.count, signature(rec)
            self.count += 1
            store.set(f"{PREFIX}/{n}/{self.rank}", json.dumps(mine))
            for p in self._peers():
                theirs = self._get(f"{PREFIX}/{n}/{p}")
                if theirs is not None and differs(mine, theirs):
                    self._diverged(n, {self.rank: mine, p: theirs}, {})
                done = self._get(f"{PREFIX}/done/{p}") if theirs is None else None
                if done is not None and int(done) <= n:
                    self._diverged(n, {self.rank: mine, p: None}, {p: int(done)})

    def at_meeting_point(self) -> str | None:
        """After capture: say how many collectives this rank issued; a reason when a peer entered one past that
        count (one this rank never joins). Called again while the rank waits for its peers."""
        with self._lock:
            store = self.store()
            if self.found is not None:
                return self.found["message"]
            if store is None or self.world_size < 2:
                return None
            if not self.closed:
                self.closed = True
                store.set(f"{PREFIX}/done/{self.rank}", json.dumps(self.count))
            for p in self._peers():
                theirs = self._get(f"{PREFIX}/{self.count}/{p}")
                if theirs is not None:
                    self.found = self._found(self.count, {p: theirs, self.rank: None}, {self.rank: self.count})
                    return self.found["message"]
        return None

    def _found(self, n: int, sigs: dict[int, dict[str, Any] | None], done: dict[int, int]) -> dict[str, Any]:
        each = "; ".join(f"rank {r} {'calls ' if s is not None else ''}{describe(s, done.get(r))}"
                         for r, s in sorted(sigs.items()))
        message = (f"the ranks' collectives diverge at collective #{n + 1}: {each}. A real run hangs here until "
                   f"the collective timeout; cgtool stopped every rank")
        found = {"index": n, "ranks": {str(r): s for r, s in sigs.items()},
                 "done": {str(r): c for r, c in done.items()}, "found_by": self.rank, "message": message}
        self.record({"divergence": found})
        return found

    def _diverged(self, n: int, sigs: dict[int, dict[str, Any] | None], done: dict[int, int]) -> None:
        self.found = self._found(n, sigs, done)
        self.closed = True
        raise CollectivesDiverged(self.found["message"])
