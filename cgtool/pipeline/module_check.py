"""When the step with its graphed modules differs from eager: which module does it. Each graphed module is checked
alone (the step with only it graphed, against eager from identical state); the ones that differ alone are named
with the likely cause and left out, and the rest is checked together as the recommended set."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from cgtool.model.partial import DIVERGES, ModuleEntry
from cgtool.model.report import ReplayCheck


def find_diverging(entries: list[ModuleEntry], graphed: list[Any], whole: ReplayCheck,
                   check: Callable[[list[Any]], ReplayCheck],
                   watched: list[Any]) -> tuple[list[ModuleEntry], list[Any], ReplayCheck | None]:
    """(entries with the diverging modules marked, the recommended set, its replay check). `whole` is the check of
    the step with every module of `graphed`, which differed. When no module differs alone (the difference needs
    several of them together) the set is returned unchanged, replay None."""
    alone = {g.path: check([g]) for g in graphed} if len(graphed) > 1 else {graphed[0].path: whole}
    bad = {path: r for path, r in alone.items() if r.status == "mismatch"}
    if not bad:
        return entries, graphed, None
    by_path = {w.path: w for w in watched}
    marked = [dataclasses.replace(e, status=DIVERGES, reason=likely_cause(by_path.get(e.path), bad[e.path]))
              if e.path in bad else e for e in entries]
    chosen = [g for g in graphed if g.path not in bad]
    return marked, chosen, check(chosen) if chosen else None


def likely_cause(watched: Any, replay: ReplayCheck) -> str:
    """Why a module's graph gives another step than eager, from what its eager calls did."""
    worst = ""
    bad = [d for d in replay.tensors if not d.ok]
    if bad:
        top = max(bad, key=lambda d: d.max_abs)
        worst = f" (max abs error {top.max_abs:.3g} at `{top.name}`)"
    causes = []
    if watched is not None and watched.changed_inputs:
        names = ", ".join(f"`{n}`" for n in sorted(watched.changed_inputs))
        causes.append(f"it updates its input {names} in place: the graph updates its own static copy of the input, "
                      "the caller's tensor stays as it was")
    if watched is not None and watched.changed_attributes:
        names = ", ".join(f"`{n}`" for n in sorted(watched.changed_attributes))
        causes.append(f"its call changes host state ({names}): the graph replays what the captured call computed "
                      "from it and leaves it unchanged")
    if not causes:
        causes.append("a tensor or buffer the graph holds from capture (an output kept across calls, state read at "
                      "capture), or host state it reads")
    return "the step with it graphed differs from eager" + worst + ": " + "; ".join(causes)
