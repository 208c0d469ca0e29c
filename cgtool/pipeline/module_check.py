"""When the step with its graphed modules differs from eager: which module does it. Each graphed module is checked
alone (the step with only it graphed, against eager from identical state); the ones that differ alone are named
with the likely cause and left out, and the rest is checked together as the recommended set. When every module
matches alone (the difference needs several of them together), the set is grown one module at a time in the
map's order, each kept when the step with it added still matches: the ones whose addition makes the step differ
are named, with the modules they differ together with."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from cgtool.model.partial import DIVERGES, ModuleEntry
from cgtool.model.report import ReplayCheck


def find_diverging(entries: list[ModuleEntry], graphed: list[Any], whole: ReplayCheck,
                   check: Callable[[list[Any]], ReplayCheck],
                   watched: list[Any]) -> tuple[list[ModuleEntry], list[Any], ReplayCheck | None]:
    """(entries with the diverging modules marked, the recommended set, its replay check). `whole` is the check of
    the step with every module of `graphed`, which differed. When no smaller set matches either, the set is
    returned unchanged, replay None."""
    alone = {g.path: check([g]) for g in graphed} if len(graphed) > 1 else {graphed[0].path: whole}
    bad = {path: r for path, r in alone.items() if r.status == "mismatch"}
    together: dict[str, list[str]] = {}
    kept_replay = None
    if bad:
        chosen = [g for g in graphed if g.path not in bad]
    else:
        chosen, kept_replay, bad, together = _grow(graphed, alone, check)
        if not bad or not chosen:
            return entries, graphed, None
    by_path = {w.path: w for w in watched}
    marked = [dataclasses.replace(e, status=DIVERGES, reason=likely_cause(by_path.get(e.path), bad[e.path],
                                                                          together.get(e.path, ())))
              if e.path in bad else e for e in entries]
    if kept_replay is None and chosen:
        kept_replay = check(chosen)
    return marked, chosen, kept_replay


def _grow(graphed: list[Any], alone: dict[str, ReplayCheck], check: Callable[[list[Any]], ReplayCheck]) -> tuple[
        list[Any], ReplayCheck | None, dict[str, ReplayCheck], dict[str, list[str]]]:
    """Every module matches alone: add them one at a time, keeping each that leaves the step matching eager.
    -> (the kept set, its last check, the left-out modules' checks, the modules each was left out beside)."""
    kept: list[Any] = []
    last: ReplayCheck | None = None
    bad: dict[str, ReplayCheck] = {}
    together: dict[str, list[str]] = {}
    for g in graphed:
        r = check(kept + [g]) if kept else alone[g.path]
        if r.status == "match":
            kept, last = kept + [g], r
        else:
            bad[g.path], together[g.path] = r, [k.path for k in kept]
    return kept, last, bad, together


def likely_cause(watched: Any, replay: ReplayCheck, together: Any = ()) -> str:
    """Why a module's graph gives another step than eager, from what its eager calls did (`together`: the
    modules graphed beside it when the step differed; it matched alone)."""
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
    beside = (" together with " + ", ".join(f"`{p}`" for p in together) + " (alone it matches)") if together else ""
    return "the step with it graphed" + beside + " differs from eager" + worst + ": " + "; ".join(causes)
