"""Checks across the ranks of a distributed run (CG601-CG609): plain functions on the ranks' records
(collectives, DDP wrappers, reports, facts); docs/rules.md documents each rule."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from cgtool.model.finding import CONFIRMED, RANKS, Finding
from cgtool.model.frame import Frame
from cgtool.model.ranks import Collective, RankResult
from cgtool.model.report_parts import PEERS_NOT_READY
from cgtool.model.rules import finding

DDP_MIN_WARMUP = 11  # PyTorch's docs ("Usage with DistributedDataParallel"); measured: 3 fail, 11 capture
MIN_NCCL = (2, 9, 6)
PHASES = ("warmup", "capture")  # the phases whose collectives every rank runs in the same order


def _at(rule: str, message: str, frame: Frame | None, script: str | None = None) -> Finding:
    if frame is None:
        return finding(rule, message, file=script, origin=RANKS)
    return finding(rule, message, file=frame.file, line=frame.line, source=frame.source, function=frame.function,
                   origin=RANKS)


def _where(c: Collective | None) -> str:
    if c is None:
        return "no collective"
    line = f" at line {c.frame.line}" if c.frame else ""
    return f"{c.op}({c.detail}){line}" if c.detail else f"{c.op}{line}"


def check_collective_order(ranks: Sequence[RankResult]) -> list[Finding]:
    """CG601: iteration by iteration (warmup, then the capture iteration), the first place where the ranks'
    collectives differ (another op, or one rank calls where another calls none)."""
    if len(ranks) < 2:
        return []
    keys = sorted({(c.iteration, c.phase) for r in ranks for c in r.collectives if c.phase in PHASES})
    for iteration, phase in keys:
        seqs = {r.rank: [c for c in r.collectives if c.phase == phase and c.iteration == iteration] for r in ranks}
        # a rank with no record of this iteration at all may just not have got there (stuck earlier): skip it
        seqs = {rank: s for rank, s in seqs.items()
                if s or any(c.iteration >= iteration for r in ranks if r.rank == rank for c in r.collectives)}
        if len(seqs) < 2:
            continue
        for i in range(max(len(s) for s in seqs.values())):
            here = {rank: (s[i] if i < len(s) else None) for rank, s in seqs.items()}
            if len({None if c is None else c.op for c in here.values()}) == 1:
                continue
            calls = [c for c in here.values() if c is not None]
            missing = [rank for rank, c in here.items() if c is None]
            odd = calls[0]  # with a rank that calls nothing here, the others' call is the rank-dependent one
            counts = ", ".join(f"rank {rank}: {len(s)}" for rank, s in seqs.items())
            each = "; ".join(f"rank {rank} calls {_where(c)}" for rank, c in here.items())
            label = "the capture iteration" if phase == "capture" else f"warmup iteration {iteration}"
            note = f" — rank(s) {', '.join(map(str, missing))} never join it" if missing else ""
            return [_at("CG601", f"collective #{i + 1} of {label} differs across ranks: {each}{note} "
                                 f"(collectives in that iteration: {counts})", odd.frame)]
    return []


def check_divergence(ranks: Sequence[RankResult]) -> list[Finding]:
    """CG601 as it happened: the first place where a rank saw the ranks' collectives part (rank_sequence.py),
    at the line of the call that has no partner (the earliest iteration's, or the only one)."""
    found = next((r.divergence for r in ranks if r.divergence), None)
    if not found:
        return []
    sigs = [s for s in found.get("ranks", {}).values() if s]
    order = {p: i for i, p in enumerate(("setup", "warmup", "capture"))}
    odd = min(sigs, key=lambda s: (order.get(s.get("phase"), 9), s.get("iteration", -1)), default=None)
    if odd is None or not odd.get("line"):
        return [_at("CG601", found.get("message", ""), None)]
    import linecache

    source = linecache.getline(odd["file"], odd["line"]).strip() if odd.get("file") else ""
    return [finding("CG601", found.get("message", ""), file=odd.get("file"), line=odd.get("line"),
                    source=source or None)]


def check_uncaptured_collectives(ranks: Sequence[RankResult]) -> list[Finding]:
    """CG602: a collective of the capture phase issued while the current stream was not capturing (GPU run)."""
    out, seen = [], set()
    for r in ranks:
        for c in r.collectives:
            if c.phase == "capture" and c.capturing is False and (c.frame and (c.frame.file, c.frame.line)) not in seen:
                seen.add(c.frame and (c.frame.file, c.frame.line))
                out.append(_at("CG602", f"rank {r.rank}: {c.op} issued during capture on a stream that is not "
                                        "capturing: it runs once now and is missing from every replay", c.frame))
    return out


def _failure(r: RankResult) -> tuple[str, Frame | None]:
    """What went wrong on a rank that failed by itself: 'capture failed at x.py:18 (cudaError...)'."""
    assert r.report is not None
    err = r.report.errors[0] if r.report.errors else None
    if err is None:
        return f"ended with status {r.report.status}", None
    frame = err.user_frame
    where = f" at {frame.file}:{frame.line}" if frame else ""
    cuda = f" ({err.cuda_error})" if err.cuda_error else ""
    return f"{err.phase} failed{where}{cuda}: {err.label}{err.message[:160]}", frame


def check_rank_failures(ranks: Sequence[RankResult]) -> list[Finding]:
    """CG603: some ranks failed by themselves while others captured or were stopped waiting."""
    if len(ranks) < 2:
        return []
    own = [r for r in ranks if r.report is not None and r.failed]
    waited = [r for r in ranks if r.report is None or not r.failed]
    if not waited:
        return []  # every rank failed by itself: each report says why (not a rank waiting on another)
    def waiting(r: RankResult) -> str:
        last = r.collectives[-1] if r.collectives else None
        state = f"stopped in {r.phase or 'start-up'} ({r.exit})" if r.report is None else "captured; replay check " \
            "and timing skipped" if any(s.code == PEERS_NOT_READY for s in r.report.skipped) \
            else "finished"
        return f"rank {r.rank} {state}" + (f", last collective {_where(last)}" if r.report is None and last else "")
    if not own:
        if all(r.report is not None for r in ranks) or all(r.report is None for r in ranks):
            return []  # every rank finished without failing, or none finished (the launch error says where each was)
        stuck = "; ".join(waiting(r) for r in waited)
        last = next((r.collectives[-1] for r in waited if r.collectives), None)
        return [_at("CG603", f"some ranks finished, others did not: {stuck}. A rank waits on a collective another rank never "
                             "issues (see CG601) or hangs on its own", last.frame if last else None)]
    out = []
    for r in own:
        what, frame = _failure(r)
        others = "; ".join(waiting(w) for w in waited)
        out.append(_at("CG603", f"rank {r.rank} {what}; meanwhile {others}", frame))
    return out


# Collectives that make the host wait: a barrier waits for every rank (NCCL: a one-element all-reduce, then a
# device synchronization); the *_object collectives pickle Python objects and move them through host memory.
HOST_SYNCING = ("barrier", "monitored_barrier", "all_gather_object", "broadcast_object_list", "gather_object",
                "scatter_object_list")


def _in_step(c: Collective) -> bool:
    """Called inside the step by the user's own line (not by a library the line called: FSDP's setup barrier)."""
    return (c.phase in PHASES and c.iteration >= 0 and c.frame is not None
            and f"{c.op}(" in (c.frame.source or ""))


def check_host_collectives(ranks: Sequence[RankResult]) -> list[Finding]:
    """CG608 (a host-synchronizing collective inside the step), confirmed where a rank's capture failed at
    its line; CG609 (all_to_all_single with split sizes given as host lists inside the step)."""
    out: list[Finding] = []
    seen: set[tuple[str, object, object]] = set()
    failed_at = {(e.user_frame.file, e.user_frame.line) for r in ranks if r.report is not None
                 for e in r.report.errors if e.phase == "capture" and e.user_frame is not None}
    for r in ranks:
        for c in r.collectives:
            frame = c.frame
            if frame is None or not _in_step(c) or (c.op, frame.file, frame.line) in seen:
                continue
            if c.op in HOST_SYNCING:
                seen.add((c.op, frame.file, frame.line))
                what = ("waits on the host until every rank reached it (NCCL: an all-reduce, then a device "
                        "synchronization)" if "barrier" in c.op else
                        "pickles Python objects and moves them through host memory (a device-to-host copy)")
                hit = (frame.file, frame.line) in failed_at
                f = _at("CG608", f"{c.op}() inside the step {what}: capture does not allow a host synchronization"
                                 + (" (the real capture failed at this line)" if hit else ""), frame)
                out.append(replace(f, evidence=CONFIRMED) if hit else f)
            elif c.op == "all_to_all_single" and "sizes[" in c.detail:
                seen.add((c.op, frame.file, frame.line))
                out.append(_at("CG609", "all_to_all_single with split sizes given as Python lists inside the step: "
                                        "the host must know them (a .tolist() of routing counts is a device sync) and "
                                        "the graph keeps the captured sizes for every replay", frame))
    return out


def drop_explained_failures(ranks: Sequence[RankResult], cross: list[Finding]) -> None:
    """A rank's CG501 ("capture failed", nothing explains it) at the line of a confirmed CG608 is explained
    by it: the rank's report keeps the CG608 reason instead of the generic one."""
    lines = {(f.file, f.line) for f in cross if f.rule == "CG608" and f.evidence == CONFIRMED}
    for r in ranks:
        if r.report is not None and lines:
            r.report.findings = [f for f in r.report.findings if not (f.rule == "CG501" and (f.file, f.line) in lines)]


def check_ddp(ranks: Sequence[RankResult], warmup: int) -> list[Finding]:
    """CG604 (DDP constructed on the default stream) and CG605 (fewer than 11 warmup iterations)."""
    out = []
    wraps = [(r.rank, d) for r in ranks for d in r.ddp]
    default = [(rank, d) for rank, d in wraps if d.on_default_stream]
    if default:
        rank_list = sorted({rank for rank, _ in default})
        out.append(_at("CG604", f"DistributedDataParallel constructed on the default stream (rank(s) "
                                f"{', '.join(map(str, rank_list))}); PyTorch's docs ask for a side-stream context, "
                                "and without it capture fails with only cudaErrorStreamCaptureInvalidated",
                       default[0][1].frame))
    if wraps and warmup < DDP_MIN_WARMUP:
        out.append(_at("CG605", f"DDP warmed up {warmup} iteration(s) before capture; PyTorch's docs ask for at least "
                                f"{DDP_MIN_WARMUP} (measured: capture fails after 3, succeeds after 11)", wraps[0][1].frame))
    return out


def _version(text: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in str(text).split(".")[:3])
    except ValueError:
        return None


def check_nccl(ranks: Sequence[RankResult], script: str | None = None) -> list[Finding]:
    """CG606 (blocking wait, async error handling on a failed DDP capture) and CG607 (NCCL too old)."""
    out: list[Finding] = []
    facts = next((r.facts for r in ranks if r.facts), {})
    env: dict[str, Any] = facts.get("env", {})
    if facts.get("backend") != "nccl":
        return out
    version = _version(facts.get("nccl", ""))
    if version is not None and version < MIN_NCCL:
        out.append(_at("CG607", f"NCCL {facts['nccl']} cannot capture collectives (needs 2.9.6 or newer)", None, script))
    blocking = env.get("TORCH_NCCL_BLOCKING_WAIT", env.get("NCCL_BLOCKING_WAIT"))
    if blocking not in (None, "", "0"):
        out.append(_at("CG606", f"TORCH_NCCL_BLOCKING_WAIT={blocking}: work.wait() blocks the host on the collective, "
                                "a synchronization that capture does not allow", None, script))
    async_eh = env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", env.get("NCCL_ASYNC_ERROR_HANDLING"))
    ddp_failed = any(r.ddp for r in ranks) and any(r.report is not None and r.report.status == "capture-failed"
                                                   for r in ranks)
    if ddp_failed and async_eh not in ("0",):
        out.append(_at("CG606", f"TORCH_NCCL_ASYNC_ERROR_HANDLING={async_eh or 'unset (on)'} while DDP's capture failed; "
                                "PyTorch's docs ask for 0 when capturing DDP (measured on torch 2.11 / NCCL 2.28.9: it "
                                "did not change the outcome, so fix CG604/CG605 first)", None, script))
    return out


def check_distributed(ranks: Sequence[RankResult], warmup: int, script: str | None = None) -> list[Finding]:
    """Every cross-rank finding, in rule order."""
    diverged = check_divergence(ranks)  # found as it happened: the ranks were stopped there, none failed by itself
    out = ((diverged or check_collective_order(ranks)) + check_uncaptured_collectives(ranks)
           + ([] if diverged else check_rank_failures(ranks)) + check_ddp(ranks, warmup) + check_nccl(ranks, script)
           + check_host_collectives(ranks))
    return sorted(out, key=lambda f: f.rule)
