"""The ranks' collectives compared as they run (cgtool/pipeline/rank_sequence.py), through an in-memory store
shaped like torch.distributed's (set/check/get), and CG608/CG609 on recorded collectives."""

from __future__ import annotations

import json

import pytest

from cgtool.checks.distributed import check_distributed, drop_explained_failures
from cgtool.model.finding import CONFIRMED
from cgtool.model.frame import Frame
from cgtool.model.ranks import FINISHED, Collective, RankResult
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, ErrorRecord, Report
from cgtool.model.rules import finding
from cgtool.pipeline.rank_sequence import SequenceCheck
from cgtool.trace.dist_watch import CollectivesDiverged

S = "/x/step.py"


class Store:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def set(self, key: str, value: str) -> None:
        self.data[key] = value.encode()

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)

    def get(self, key: str) -> bytes:
        return self.data[key]


def pair(events: list | None = None) -> tuple[SequenceCheck, SequenceCheck]:
    store = Store()
    out = []
    for r in (0, 1):
        seq = SequenceCheck(r, 2, (events.append if events is not None else lambda e: None))
        seq._store = store
        out.append(seq)
    return out[0], out[1]


def rec(op: str, line: int, it: int, phase: str = "warmup", detail: str = "float32[16,256]") -> dict:
    return {"op": op, "phase": phase, "iteration": it, "detail": detail,
            "frame": {"file": S, "line": line, "function": "step", "source": f"dist.{op}(y)"}}


def test_the_same_collectives_on_both_ranks_pass():
    a, b = pair()
    for it in range(3):
        a.on_collective(rec("all_reduce", 10, it))
        b.on_collective(rec("all_reduce", 10, it))
    b.on_collective(rec("all_reduce", 10, 3, "capture"))
    a.on_collective(rec("all_reduce", 10, 3, "capture"))
    assert a.at_meeting_point() is None and b.at_meeting_point() is None
    assert a.found is None and b.found is None


def test_an_extra_collective_on_one_rank_is_found_at_the_first_number_that_differs():
    events: list = []
    a, b = pair(events)
    a.on_collective(rec("all_reduce", 10, 0))
    b.on_collective(rec("all_reduce", 10, 0))
    a.on_collective(rec("all_reduce", 12, 0))  # rank 0 only; rank 1 has not got there yet
    with pytest.raises(CollectivesDiverged) as err:
        b.on_collective(rec("all_reduce", 10, 1))  # rank 1's next call pairs with rank 0's extra one
    msg = str(err.value)
    assert "collective #2" in msg and "rank 0 calls all_reduce(float32[16,256]) at step.py:12 in warmup iteration 0" in msg
    assert "rank 1 calls all_reduce(float32[16,256]) at step.py:10 in warmup iteration 1" in msg
    assert events and events[0]["divergence"]["index"] == 1 and events[0]["divergence"]["found_by"] == 1


def test_a_collective_past_what_a_finished_rank_issued_is_found_by_either_side():
    a, b = pair()
    a.on_collective(rec("all_reduce", 20, 0))  # only rank 0 calls it; rank 1 never calls any
    reason = b.at_meeting_point()  # rank 1 after capture, waiting for its peers
    assert reason and "rank 0 calls all_reduce" in reason and "rank 1 finished warmup and capture after 0 collectives" in reason
    a2, b2 = pair()
    b2.at_meeting_point()  # rank 1 got there first
    with pytest.raises(CollectivesDiverged, match="rank 1 finished warmup and capture after 0 collectives"):
        a2.on_collective(rec("all_reduce", 20, 0))


def test_sizes_matter_where_they_must_match_and_not_for_all_to_all_or_point_to_point():
    a, b = pair()
    a.on_collective(rec("all_to_all_single", 10, 0, detail="float32[8,4] float32[6,4]"))
    b.on_collective(rec("all_to_all_single", 10, 0, detail="float32[5,4] float32[7,4]"))
    a.on_collective(rec("send", 11, 0))
    b.on_collective(rec("recv", 12, 0))
    a.on_collective(rec("all_reduce", 13, 0, detail="float32[4]"))
    with pytest.raises(CollectivesDiverged, match="float32\\[5\\]"):
        b.on_collective(rec("all_reduce", 13, 0, detail="float32[5]"))


def test_phases_after_the_meeting_point_are_not_compared():
    a, b = pair()
    assert a.at_meeting_point() is None and b.at_meeting_point() is None
    a.on_collective(rec("all_reduce", 10, 5, "replay-check"))
    b.on_collective(rec("broadcast", 11, 5, "timing"))
    assert a.found is None and b.found is None


def test_no_store_no_comparison():
    seq = SequenceCheck(0, 2, lambda e: None)  # no process group in this process
    seq.on_collective(rec("all_reduce", 10, 0))
    assert seq.at_meeting_point() is None


def fr(line: int, source: str) -> Frame:
    return Frame(S, line, "step", source)


def test_barrier_in_the_step_is_cg608_confirmed_by_the_failed_capture_and_replaces_cg501():
    barrier = Collective(1, "capture", "barrier", "", True, fr(21, "dist.barrier()"), 3)
    failure = ErrorRecord("capture", "RuntimeError", "operation not permitted when stream is capturing",
                          (fr(21, "dist.barrier()"),))
    reports = []
    for r in (0, 1):
        rep = Report(S, "step", status=CAPTURE_FAILED, device="cuda", errors=[failure])
        rep.findings = [finding("CG501", "capture failed", file=S, line=21)]
        reports.append(RankResult(r, rep, FINISHED, "capture", "exit 1", [barrier]))
    found = check_distributed(reports, warmup=3, script=S)
    cg608 = [f for f in found if f.rule == "CG608"]
    assert len(cg608) == 1 and cg608[0].line == 21 and cg608[0].evidence == CONFIRMED
    assert "barrier() inside the step waits on the host" in cg608[0].message
    drop_explained_failures(reports, found)
    assert all(r.report.findings == [] for r in reports)


def test_a_library_barrier_and_setup_barriers_are_not_cg608():
    fsdp = Collective(0, "warmup", "barrier", "", False, fr(30, "loss = model(x)"), 0)  # FSDP's own, under model(x)
    setup = Collective(0, "setup", "barrier", "", False, fr(8, "dist.barrier()"), -1)
    rk = RankResult(0, Report(S, "step", status=CAPTURED, device="cuda"), FINISHED, "timing", "finished", [fsdp, setup])
    assert [f.rule for f in check_distributed([rk], warmup=3)] == []


def test_all_to_all_with_host_split_sizes_is_cg609():
    a2a = Collective(0, "warmup", "all_to_all_single", "float32[6,4] float32[8,4] sizes[2,4] sizes[3,5]", False,
                     fr(40, "dist.all_to_all_single(out, tokens, recv, counts)"), 0)
    rk = RankResult(0, Report(S, "step", status=CAPTURED, device="cuda"), FINISHED, "timing", "finished", [a2a])
    found = check_distributed([rk], warmup=3)
    assert [(f.rule, f.line, f.severity) for f in found] == [("CG609", 40, "warning")]


def test_divergence_record_becomes_cg601_at_the_unpaired_call_and_no_cg603():
    div = {"index": 1, "found_by": 1, "done": {},
           "ranks": {"0": {"op": "all_reduce", "phase": "warmup", "iteration": 0, "detail": "", "file": S, "line": 12},
                     "1": {"op": "all_reduce", "phase": "warmup", "iteration": 1, "detail": "", "file": S, "line": 10}},
           "message": "the ranks' collectives diverge at collective #2: ..."}
    failed = Report(S, "step", status="script-error", device="cuda",
                    errors=[ErrorRecord("warmup", "CollectivesDiverged", "diverge", (fr(10, "dist.all_reduce(y)"),))])
    ranks = [RankResult(0, None, "stopped", "warmup", "stopped by the launcher"),
             RankResult(1, failed, FINISHED, "warmup", "exit 1", divergence=div)]
    found = check_distributed(ranks, warmup=3, script=S)
    assert [(f.rule, f.line) for f in found] == [("CG601", 12)]
    assert json.loads(json.dumps(ranks[1].to_json()))["divergence"]["index"] == 1
    assert RankResult.from_json(ranks[1].to_json()).divergence == div
