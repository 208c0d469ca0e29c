"""The cross-rank checks, the merge and the distributed report on plain records (no processes)."""

from __future__ import annotations

import json
import os
import sys

from cgtool.checks.distributed import check_distributed
from cgtool.graph.model import Graph
from cgtool.model.frame import Frame
from cgtool.model.job import CaptureSettings, Job
from cgtool.model.ranks import FINISHED, STOPPED, Collective, DdpWrap, DistReport, RankResult
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, ErrorRecord, Report, Timings
from cgtool.worker.launch import LaunchOutcome, descendants, launcher_command
from cgtool.worker.merge import merge, nccl_kernels
from cgtool.worker.start import BOOT, PACKAGE_DIR
from conftest import ROOT

S = "/x/step.py"


def fr(line: int) -> Frame:
    return Frame(S, line, "step", f"line {line}")


def coll(it: int, i: int, op: str, line: int, phase: str = "warmup", capturing: bool | None = False) -> Collective:
    return Collective(i, phase, op, "float32[4]", capturing, fr(line), it)


def rank(r: int, colls: list[Collective], status: str = CAPTURED, **kw) -> RankResult:
    return RankResult(r, Report(S, "step", status=status, device="cuda"), FINISHED, "timing", "finished", colls, **kw)


def rules(findings):
    return [(f.rule, f.line) for f in findings]


def test_same_collectives_on_every_rank_find_nothing():
    seq = [coll(i, 0, "all_reduce", 10) for i in range(3)] + [coll(3, 0, "all_reduce", 10, "capture", True)]
    assert check_distributed([rank(0, seq), rank(1, list(seq))], warmup=3) == []


def test_rank_dependent_collective_is_named_at_its_line():
    r0 = [coll(0, 0, "all_reduce", 10), coll(0, 1, "all_reduce", 12), coll(1, 2, "all_reduce", 10)]
    r1 = [coll(0, 0, "all_reduce", 10), coll(1, 1, "all_reduce", 10)]
    found = check_distributed([rank(0, r0), rank(1, r1)], warmup=3)
    assert rules(found) == [("CG601", 12)]
    assert "rank 1 calls no collective" in found[0].message and "warmup iteration 0" in found[0].message


def test_different_op_order_is_a_mismatch():
    r0 = [coll(3, 0, "all_reduce", 10, "capture", True), coll(3, 1, "broadcast", 11, "capture", True)]
    r1 = [coll(3, 0, "broadcast", 11, "capture", True), coll(3, 1, "all_reduce", 10, "capture", True)]
    found = check_distributed([rank(0, r0), rank(1, r1)], warmup=3)
    assert rules(found) == [("CG601", 10)] and "the capture iteration" in found[0].message


def test_a_stuck_rank_is_not_blamed_for_iterations_it_never_reached():
    r0 = [coll(i, 0, "all_reduce", 10) for i in range(3)]
    r1 = [coll(0, 0, "all_reduce", 10)]  # stuck in iteration 0 (its later iterations never ran)
    stopped = RankResult(1, None, STOPPED, "warmup", "killed by SIGKILL", r1)
    assert [f.rule for f in check_distributed([rank(0, r0), stopped], warmup=3)] == ["CG603"]


def test_collective_on_a_non_capturing_stream():
    seq = [coll(3, 0, "all_reduce", 14, "capture", capturing=False)]
    assert rules(check_distributed([rank(0, seq), rank(1, list(seq))], warmup=3)) == [("CG602", 14)]


def test_one_rank_failing_names_rank_and_line():
    failed = Report(S, "step", status=CAPTURE_FAILED, device="cuda")
    failed.errors.append(ErrorRecord("capture", "RuntimeError", "operation not permitted", (fr(18),),
                                     "cudaErrorStreamCaptureUnsupported"))
    r1 = RankResult(1, failed, FINISHED, "capture", "exit 1")
    r0 = RankResult(0, None, STOPPED, "replay-check", "killed by SIGTERM")
    found = check_distributed([r0, r1], warmup=3)
    assert rules(found) == [("CG603", 18)]
    assert "rank 1 capture failed" in found[0].message and "rank 0 stopped in replay-check" in found[0].message


def test_every_rank_failing_alone_is_not_cg603():
    reports = []
    for r in range(2):
        rep = Report(S, "step", status=CAPTURE_FAILED, device="cuda")
        rep.errors.append(ErrorRecord("capture", "RuntimeError", "x", (fr(5),)))
        reports.append(RankResult(r, rep, FINISHED, "capture", "exit 1"))
    assert check_distributed(reports, warmup=11) == []


def test_ddp_on_default_stream_and_short_warmup():
    ddp = [DdpWrap(fr(7), on_default_stream=True)]
    found = check_distributed([rank(0, [], ddp=ddp), rank(1, [], ddp=list(ddp))], warmup=3)
    assert rules(found) == [("CG604", 7), ("CG605", 7)]
    side = [DdpWrap(fr(7), on_default_stream=False)]
    assert check_distributed([rank(0, [], ddp=side), rank(1, [], ddp=side)], warmup=11) == []


def test_nccl_version_and_blocking_wait():
    facts = {"backend": "nccl", "nccl": "2.8.4", "env": {"TORCH_NCCL_BLOCKING_WAIT": "1"}}
    found = check_distributed([rank(0, [], facts=facts), rank(1, [], facts=facts)], warmup=11)
    assert sorted(f.rule for f in found) == ["CG606", "CG607"]
    ok = {"backend": "nccl", "nccl": "2.28.9", "env": {"NCCL_NVLS_ENABLE": "0"}}
    assert check_distributed([rank(0, [], facts=ok)], warmup=11) == []


def test_merge_takes_the_slowest_rank_and_counts_nccl_kernels():
    g = Graph.from_json({"source": "cuda", "nodes": [
        {"id": 0, "kind": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL"},
        {"id": 1, "kind": "kernel", "name": "gemm"}], "edges": [[1, 0]]})
    ranks = []
    for r, (eager, replay) in enumerate([(100.0, 20.0), (120.0, 25.0)]):
        rr = rank(r, [])
        rr.report.graph = g
        rr.report.timings = Timings(eager, replay, 60)
        ranks.append(rr)
    rep = merge(Job("capture", S, "step"), LaunchOutcome(ranks, ["torchrun"]), CaptureSettings(warmup=11))
    assert rep.step["eager_us"] == 120.0 and rep.step["replay_us"] == 25.0 and rep.step["slowest_eager_rank"] == 1
    assert rep.ranks[0].summary["nccl_kernels"] == {"ncclDevKernel_AllReduce_Sum_f32_RING_LL": 1}
    assert rep.graph_diffs["rank 1"]["growth_pct"] == 0.0
    assert nccl_kernels(g) == {"ncclDevKernel_AllReduce_Sum_f32_RING_LL": 1}
    again = DistReport.from_json(json.loads(json.dumps(rep.to_json())))
    assert again.to_json() == rep.to_json()


def test_launcher_is_pytorchs_own():
    cmd = launcher_command(4, "/j.json", "/run")
    assert cmd[1:5] == ["-c", BOOT, PACKAGE_DIR, "cgtool.worker.launcher"] and cmd[6] == "torch.distributed.run"  # in-process
    assert "--nproc-per-node" in cmd and "4" in cmd
    ranks = cmd.index("--no-python") + 1  # each rank: the interpreter, started the way every cgtool process starts
    assert cmd[ranks:] == [sys.executable, "-u", "-c", BOOT, PACKAGE_DIR, "cgtool.worker.rank_child", "/j.json", "/run"]
    assert descendants(999999999) == []


def test_partial_capture_on_ranks_is_a_usage_error(run_cli, tmp_path):
    """--piecewise / --modules with a script written for ranks (a world of one) or --nproc-per-node were dropped in
    silence by the distributed path; until per-rank partial capture exists they are a usage error, for capture and
    bench alike, before any worker starts."""
    script = os.path.join(ROOT, "samples", "distributed", "ddp_train.py")
    for args, why in ((["capture", script, "--piecewise"], "written for ranks"),
                      (["capture", script, "--modules", "1"], "written for ranks"),
                      (["bench", script, "--piecewise"], "written for ranks"),
                      (["capture", os.path.join(ROOT, "samples", "hazards", "item_sync.py"), "--modules", "1",
                        "--nproc-per-node", "2"], "--nproc-per-node 2")):
        r = run_cli(*args, "--out", tmp_path / "out", timeout=120)
        assert r.returncode == 2, (args, r.returncode, r.stdout, r.stderr)
        assert why in r.stderr and "partial capture per rank is not supported" in r.stderr, r.stderr
        assert not (tmp_path / "out" / "report.json").exists()


def test_a_rank_that_captured_is_captured_whatever_its_replay_check_says():
    from cgtool.commands.distributed import exit_code
    from cgtool.model.report import ReplayCheck
    from cgtool.render.distributed import verdict_line

    reports = []
    for r in (0, 1):
        rep = Report(S, "step", status=CAPTURED, device="cuda")
        rep.replay = ReplayCheck("error", "inputs(12)", (), "the replay check could not compare replay with eager "
                                 "(RuntimeError: sharding propagation failed); the capture itself worked")
        reports.append(rank(r, [], status=CAPTURED))
        reports[-1].report = rep
    dist = DistReport(S, "step", 2, reports)
    line = verdict_line(dist)
    assert "did not capture" not in line and "rank(s) 0, 1 captured" in line
    assert "rank 0: replay check failed: the replay check could not compare" in line
    assert not any(r.failed for r in reports)
    assert exit_code(dist, LaunchOutcome(reports, [])) == 1  # the replay was not verified


def test_the_verdict_line_keeps_a_failed_replay_check_beside_the_speedup():
    """Every rank timed (a speedup) but rank 1's replay check could not compare: the line returned early with the
    speedup and hid it; the page called any finding (an info one too) a problem. Both follow the exit code now."""
    from cgtool.model.exit_codes import dist_has_problems
    from cgtool.model.report import ReplayCheck
    from cgtool.model.rules import finding
    from cgtool.render.distributed import verdict_line
    from cgtool.render.html_distributed import render_distributed_html

    ranks = []
    for r in (0, 1):
        rr = rank(r, [])
        rr.report.timings = Timings(100.0, 20.0, 60)
        rr.report.replay = ReplayCheck("match", "inputs(12)")
        ranks.append(rr)
    ranks[1].report.replay = ReplayCheck("error", "inputs(12)", (), "could not compare (RuntimeError: boom)")
    rep = merge(Job("capture", S, "step"), LaunchOutcome(ranks, ["torchrun"]), CaptureSettings(warmup=11))
    line = verdict_line(rep)
    assert line.startswith("2 ranks captured; step (slowest rank) eager") and "5.0× faster" in line
    assert "rank 1: replay check failed: could not compare (RuntimeError: boom)" in line
    assert dist_has_problems(rep) and exit_code_of(rep) == 1
    assert 'class="verdict bad"' in render_distributed_html(rep)
    ranks[1].report.replay = ReplayCheck("match", "inputs(12)")
    ranks[0].report.findings = [finding("CG610", "a note", severity="info", file=S, line=3)]  # an info finding only
    assert verdict_line(rep).endswith("5.0× faster") and not dist_has_problems(rep) and exit_code_of(rep) == 0
    page = render_distributed_html(rep)
    assert 'class="verdict ok"' in page and 'class="verdict bad"' not in page


def exit_code_of(rep: DistReport) -> int:
    from cgtool.model.exit_codes import distributed_exit

    return int(distributed_exit(rep, None, rep.ranks))


def test_a_world_whose_script_raised_is_not_complete():
    """A rank whose script raised (or that wrote no report) makes the run incomplete: its files go beside an
    existing report.json (report.failed.json), as a plain capture's do; a failed capture is a complete answer."""
    from cgtool.model.report import SCRIPT_ERROR
    from cgtool.render.outputs import dist_complete

    assert dist_complete(DistReport(S, "step", 2, [rank(0, []), rank(1, [], status=CAPTURE_FAILED)]), None)
    assert not dist_complete(DistReport(S, "step", 2, [rank(0, []), rank(1, [], status=SCRIPT_ERROR)]), None)
    assert not dist_complete(DistReport(S, "step", 2, [rank(0, []), RankResult(1, None, STOPPED)]), None)
    assert not dist_complete(DistReport(S, "step", 2, [rank(0, []), rank(1, [])]), "timeout")
    assert not dist_complete(DistReport(S, "step", 0, []), None)
