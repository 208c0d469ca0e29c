"""A step compiled with CUDA graphs on every rank (torch.compile reduce-overhead under FSDP2: no capture of
cgtool's, torch.compile's trees observed per rank) merges as a success: each rank "compiled", its graphs, kernels
in them and graph breaks in the rank table, the step time as compiled against eager (the slowest rank), exit 0;
never "did not capture" (2x H200 before the fix: both ranks exit 1, "rank(s) 0, 1 of 2 did not capture"; after it,
tests/gpu/test_dist_fsdp_gpu.py: exit 0, both ranks "compiled")."""

from __future__ import annotations

import json

from cgtool.commands.distributed import exit_code
from cgtool.model.compiled import CompiledRun, GraphBreak, TreeFunction
from cgtool.model.frame import Frame
from cgtool.model.job import CaptureSettings, Job
from cgtool.model.ranks import FINISHED, DistReport, RankResult
from cgtool.model.report import COMPILED, Report
from cgtool.render.distributed import rank_table, verdict_line
from cgtool.worker.launch import LaunchOutcome
from cgtool.worker.merge import merge

S = "/x/fsdp2_compiled.py"
FSDP_HOOK = Frame("/torch/distributed/fsdp/_fully_shard/_fsdp_state.py", 64, "fsdp_hook_wrapper")


def compiled_rank(r: int, eager: float, as_compiled: float, errors: bool = False) -> RankResult:
    run = CompiledRun("torch.compile reduce-overhead (CUDAGraph Trees)", observed=True,
                      functions=[TreeFunction(0, "partition_0", "FORWARD", "0/0", 5, rerecords=4),
                                 TreeFunction(1, "partition_0", "BACKWARD", "0/0", 5)],
                      kernels_in_graphs=54, kernels_outside=118,
                      breaks=[GraphBreak(FSDP_HOOK, "Attempted to call function marked as skipped", kind="call")],
                      timings_us={"eager": eager, "compiled": eager * 0.9, "cudagraphs": as_compiled})
    rep = Report(S, "step", status=COMPILED, device="cuda", compiled=run)
    if errors:
        from cgtool.model.report import ErrorRecord

        rep.errors.append(ErrorRecord("timing", "RuntimeError", "boom"))
    return RankResult(r, rep, FINISHED, "timing", "finished")


def test_compiled_ranks_merge_as_a_success_with_their_step_time():
    ranks = [compiled_rank(0, 24000.0, 22000.0), compiled_rank(1, 23000.0, 23500.0)]
    outcome = LaunchOutcome(ranks, ["torchrun"])
    rep = merge(Job("capture", S, "step"), outcome, CaptureSettings(warmup=11))
    s0 = rep.ranks[0].summary
    assert (s0["status"], s0["graphs"], s0["kernels"], s0["breaks"]) == ("compiled", 10, 54, 1)
    assert s0["eager_us"] == 24000.0 and s0["replay_us"] == 22000.0
    assert rep.step["eager_us"] == 24000.0 and rep.step["replay_us"] == 23500.0  # the slowest rank, per mode
    assert (rep.step["slowest_eager_rank"], rep.step["slowest_replay_rank"]) == (0, 1)
    assert not any(r.failed for r in rep.ranks) and rep.status == "compiled"
    line = verdict_line(rep)
    assert "did not capture" not in line and line.startswith("2 ranks ran compiled with CUDA graphs"), line
    assert "as compiled" in line and "1.02×, no faster than eager" in line, line  # 24000 / 23500
    assert int(exit_code(rep, outcome)) == 0
    again = DistReport.from_json(json.loads(json.dumps(rep.to_json())))
    assert again.to_json() == rep.to_json()
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    Console(file=out, width=200, color_system=None).print(rank_table(rep))
    assert "10 graphs" in out.getvalue() and "compiled" in out.getvalue()


def test_a_compiled_rank_with_an_error_still_fails_the_run():
    ranks = [compiled_rank(0, 24000.0, 22000.0), compiled_rank(1, 23000.0, 23500.0, errors=True)]
    outcome = LaunchOutcome(ranks, ["torchrun"])
    rep = merge(Job("capture", S, "step"), outcome, CaptureSettings(warmup=11))
    assert rep.ranks[1].failed and not rep.ranks[0].failed
    assert int(exit_code(rep, outcome)) == 1
