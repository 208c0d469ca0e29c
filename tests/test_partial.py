"""Partial capture on CPU (docs/partial.md): the kernel split of a profiler trace, the records and schema 2,
the split points and the module map from the CPU analysis, the verdict, the CLI options, DOT per piece."""

import json
import os

import pytest
import torch
from conftest import ROOT

from cgtool.capture.kernel_split import split_kernels
from cgtool.graph.model import Graph, GraphNode
from cgtool.model.frame import Frame
from cgtool.model.job import PARTIAL, Job, PartialSettings
from cgtool.model.partial import (
    CLEAN,
    CPU_ONLY,
    FAILED,
    FAILS,
    GRAPHED,
    MEASURED,
    ModuleEntry,
    ModuleMap,
    Piece,
    Piecewise,
    SplitPoint,
)
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import CAPTURE_FAILED, ErrorRecord, ReplayCheck, Report, Timings

PARTIAL_DIR = os.path.join(ROOT, "samples", "partial")


def _ev(name, cat, ts, corr=None, dur=1.0, **args):
    a = dict(args)
    if corr is not None:
        a["correlation"] = corr
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "args": a}


def test_kernels_split_by_launch_and_step():
    events = []
    for step, base in enumerate((0, 1000)):
        events.append(_ev(f"cgtool-step-{step}", "user_annotation", base, dur=900))
        events += [_ev("cudaGraphLaunch", "cuda_runtime", base + 10, corr=100 + step * 10),
                   _ev("cudaLaunchKernel", "cuda_runtime", base + 20, corr=101 + step * 10),
                   _ev("cudaGraphLaunch_v10000", "cuda_runtime", base + 30, corr=102 + step * 10)]
        events += [_ev("gemm", "kernel", base + 40, corr=100 + step * 10, dur=5.0),
                   _ev("gelu", "kernel", base + 41, corr=100 + step * 10, dur=1.0),
                   _ev("local_scalar", "kernel", base + 50, corr=101 + step * 10, dur=2.0),
                   _ev("sgd", "kernel", base + 60, corr=102 + step * 10, dur=3.0)]
    s = split_kernels({"traceEvents": events})
    assert s.steps == 2
    assert (s.kernels_in_graphs, s.kernels_outside) == (3, 1)
    assert s.us_in_graphs == pytest.approx(9.0) and s.us_outside == pytest.approx(2.0)
    assert s.launches == [(2, 6.0), (1, 3.0)]
    assert s.outside == [("local_scalar", 1)]


def test_the_last_profiled_step_is_reported_when_the_step_had_not_settled():
    """module_breaks.py on the H100: the first profiled steps still replayed graphs, then dynamo hit its recompile
    limit and ran the pieces eagerly; an average over the steps said "7 kernels in graphs" with no launch."""
    events = []
    for step, base in enumerate((0, 1000, 2000)):
        events.append(_ev(f"cgtool-step-{step}", "user_annotation", base, dur=900))
        events.append(_ev(f"cgtool-step-{step}", "gpu_user_annotation", base + 30, dur=300))  # the GPU side: not a step
        if step == 0:
            events += [_ev("cudaGraphLaunch", "cuda_runtime", base + 10, corr=500), _ev("gemm", "kernel", base + 40, corr=500)]
        events += [_ev("cudaLaunchKernel", "cuda_runtime", base + 20, corr=600 + step),
                   _ev("max", "kernel", base + 50, corr=600 + step)]
    s = split_kernels({"traceEvents": events})
    assert s.per_step == [(1, 1), (0, 1), (0, 1)] and not s.settled
    assert (s.kernels_in_graphs, s.kernels_outside, s.launches) == (0, 1, [])


def test_graph_node_id_marks_graph_kernels_without_a_launch_event():
    s = split_kernels([_ev("k", "kernel", 0, corr=5, **{"graph node id": 7}), _ev("j", "kernel", 1, corr=6)])
    assert (s.kernels_in_graphs, s.kernels_outside) == (1, 1)


def _measured() -> Report:
    g = Graph((GraphNode(0, "kernel", name="gemm"), GraphNode(1, "kernel", name="gelu")), ((0, 1),), "cuda")
    frame = Frame("/x/s.py", 30, "step", "    log.append(loss.item())")
    pw = Piecewise(MEASURED, "m", (SplitPoint("Tensor.item", frame),), (Piece(1, 2, 6.0, g), Piece(2, 1, 3.0)), 3, 1,
                   9.0, 2.0, (("local_scalar", 1),), (), ReplayCheck("match", "inputs(4)"), Timings(340.0, 100.0, 50))
    mm = ModuleMap(MEASURED, 1, (ModuleEntry("model.encoder", "Sequential", 1, GRAPHED, training=True, kernels=12),
                                 ModuleEntry("model.scale", "ScaleByMax", 1, FAILS, "CG101 at line 15")),
                   ("model.encoder",), ReplayCheck("match", "inputs(4)"), Timings(210.0, 100.0, 50))
    r = Report("/x/s.py", "step", status=CAPTURE_FAILED, device="cuda", piecewise=pw, modules=mm)
    r.errors.append(ErrorRecord("capture", "RuntimeError", "boom", (frame,)))
    return r


def test_schema_3_round_trip_and_schema_1_still_reads():
    r = _measured()
    data = json.loads(json.dumps(r.to_json()))
    assert data["schema"] == 4 and data["piecewise"]["kernel_share"] == 0.75
    back = Report.from_json(data)
    assert back.piecewise == r.piecewise and back.modules == r.modules
    old = {k: v for k, v in data.items() if k not in ("piecewise", "modules")}
    old["schema"] = 1
    assert Report.from_json(old).piecewise is None


def test_verdict_names_every_option_with_its_measured_number():
    from cgtool.render.partial import partial_verdict

    assert partial_verdict(_measured()) == ("whole step: fails at line 30 (`log.append(loss.item())`); piecewise: 2 "
                                            "graphs, 75% of kernels, 3.4× faster than eager; graphing "
                                            "`model.encoder`: 2.1×, matches eager: recommended (modules-plan.py)")


def test_verdict_says_when_piecewise_is_slower_or_not_possible():
    import dataclasses

    from cgtool.model.partial import NOT_POSSIBLE
    from cgtool.render.partial import partial_verdict

    r = _measured()
    r.piecewise = dataclasses.replace(r.piecewise, timings=Timings(189.0, 317.0, 50))
    v = partial_verdict(r)
    assert "piecewise: 2 graphs, 75% of kernels, 0.6× — slower than eager for this step" in v
    assert "not recommended" in v and "faster than eager" not in v.split(";")[1]
    r.piecewise = Piecewise(NOT_POSSIBLE, "m", note="piecewise not possible: Mutations on inputs with "
                            "user-specified streams are not yet supported.")
    assert "; piecewise not possible: Mutations on inputs" in partial_verdict(r)
    assert Piecewise.from_json(json.loads(json.dumps(r.piecewise.to_json()))) == r.piecewise


class _PybindLike:
    """Like torch._C._CUDAGraph: __new__ ignores its arguments, __init__ builds the object."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls)

    def __init__(self, keep_graph=False):
        self.keep_graph = keep_graph


def test_kept_graphs_pass_keep_graph_to_init(monkeypatch):
    import torch

    from cgtool.capture.pieces import kept_graphs

    monkeypatch.setattr(torch.cuda, "CUDAGraph", _PybindLike)
    with kept_graphs() as made:
        g = torch.cuda.CUDAGraph()
    assert g.keep_graph is True and made == [g] and torch.cuda.CUDAGraph is _PybindLike
    with kept_graphs(False) as made:
        assert torch.cuda.CUDAGraph is _PybindLike and made == []


def test_piecewise_asks_for_a_fresh_rerun_without_kept_graphs_and_reports_torch_refusals(monkeypatch):
    from cgtool.capture.pieces import PiecedStepFailed
    from cgtool.model.partial import NOT_POSSIBLE
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline import piecewise_job
    from cgtool.script.contract import ScriptRaised

    calls = []

    def checkpoint(script, settings, progress, keep):
        calls.append(keep)
        raise PiecedStepFailed("in the profiled steps", RuntimeError(
            "Expected curr_block->size == block_state.size to be true, but got false."))

    monkeypatch.setattr(piecewise_job, "_run_piecewise", checkpoint)
    with pytest.raises(piecewise_job.RerunFresh, match="kept the pieces' graphs failed .RuntimeError: Expected curr_block"):
        piecewise_job.run_piecewise(None, PartialSettings(), PhaseLog())
    # the rerun (a fresh worker, keep_graphs False) meeting torch's check again: torch refuses the step
    p = piecewise_job.run_piecewise(None, PartialSettings(keep_graphs=False), PhaseLog())
    assert calls == [True, False] and p.status == NOT_POSSIBLE and "curr_block->size" in p.note

    def refused(script, settings, progress, keep):
        calls.append(keep)
        raise PiecedStepFailed("while recording the pieces", RuntimeError(
            "Mutations on inputs with user-specified streams are not yet supported. See: "
            "https://github.com/pytorch/pytorch/issues/172522"))

    calls.clear()
    monkeypatch.setattr(piecewise_job, "_run_piecewise", refused)
    p = piecewise_job.run_piecewise(None, PartialSettings(), PhaseLog())
    assert calls == [True] and p.status == NOT_POSSIBLE
    assert p.note.startswith("piecewise not possible: Mutations on inputs with user-specified streams")
    assert 'backend="cudagraphs") raised RuntimeError while recording the pieces' in p.note

    def broken(script, settings, progress, keep):
        raise ValueError("a cgtool bug")

    monkeypatch.setattr(piecewise_job, "_run_piecewise", broken)
    with pytest.raises(piecewise_job.RerunFresh):  # with kept graphs: a run without them may get through
        piecewise_job.run_piecewise(None, PartialSettings(), PhaseLog())
    with pytest.raises(ValueError):  # without: the error itself
        piecewise_job.run_piecewise(None, PartialSettings(keep_graphs=False), PhaseLog())

    def setup_fails(script, settings, progress, keep):
        raise ScriptRaised("setup", RuntimeError("the script's own setup error"))

    monkeypatch.setattr(piecewise_job, "_run_piecewise", setup_fails)
    with pytest.raises(ScriptRaised):  # the script's error, not a reason to rerun
        piecewise_job.run_piecewise(None, PartialSettings(), PhaseLog())


def test_partial_parts_run_in_fresh_workers(monkeypatch):
    """The orchestration of the partial job's workers (worker/service.py): a piecewise run asking for a rerun
    gets one in a new worker without kept graphs, and the module map its own worker after it."""
    from cgtool.worker import service
    from cgtool.model.job import PARTIAL, Job, PartialSettings
    from cgtool.worker.client import WorkerOutcome

    from cgtool.pipeline.result import JobResult, PartialResult

    jobs = []
    failed_note, measured = Piecewise(FAILED, "x", note="x"), Piecewise(MEASURED, "x", note="3 dynamo graph(s)")
    module_map = ModuleMap(MEASURED, 1)

    def fake_run(job, timeout, on_event):
        jobs.append(job.settings)
        if job.settings.piecewise and job.settings.keep_graphs:
            return WorkerOutcome(result=JobResult(PARTIAL, partial=PartialResult(failed_note, None, [ErrorRecord(
                "piecewise", "E", "first")]), rerun_piecewise="the run that kept the pieces' graphs failed (E)",
                modules_pending=True))
        if job.settings.piecewise:
            return WorkerOutcome(result=JobResult(PARTIAL, partial=PartialResult(measured)))
        return WorkerOutcome(result=JobResult(PARTIAL, partial=PartialResult(None, module_map)))

    monkeypatch.setattr(service, "run_job", fake_run)
    merged, outcome = service.run_partial_jobs(Job(PARTIAL, "s.py", "step", PartialSettings(piecewise=True, modules=1)),
                                               60)
    assert [(j.piecewise, j.modules, j.keep_graphs) for j in jobs] == [
        (True, 1, True), (True, None, False), (False, 1, True)]
    assert merged.piecewise is not None and merged.piecewise.status == MEASURED and merged.modules == module_map
    assert merged.piecewise.note == "3 dynamo graph(s) (the run that kept the pieces' graphs failed (E))"
    assert [e.message for e in merged.errors] == ["first"] and outcome.result is not None


def test_dot_per_piece_written(tmp_path):
    from cgtool.render.outputs import write_outputs

    r = _measured()
    write_outputs(r, str(tmp_path), render_svg=False)
    assert (tmp_path / "graph-piece-1.dot").exists() and not (tmp_path / "graph-piece-2.dot").exists()
    assert "graph-piece-1.dot" in r.outputs


def _cpu_partial(name: str, depth: int = 1):
    from cgtool.pipeline import run_job

    job = Job(PARTIAL, os.path.join(PARTIAL_DIR, name), "step", PartialSettings(warmup=2, piecewise=True, modules=depth))
    result = run_job(job, PhaseLog())
    assert result.kind == PARTIAL and result.partial is not None and not result.modules_pending
    return result.partial


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only behaviour")
def test_cpu_split_points_and_module_map_name_the_breaking_submodule():
    d = _cpu_partial("module_breaks.py")
    assert d.errors == []
    pw, mm = d.piecewise, d.modules
    assert pw is not None and mm is not None
    assert pw.status == CPU_ONLY and [(s.frame.line, s.rule) for s in pw.splits] == [(15, "CG101")]
    status = {e.path: e.status for e in mm.modules}
    assert status == {"model": FAILS, "model.encoder": CLEAN, "model.scale": FAILS, "model.head": CLEAN}
    scale = next(e for e in mm.modules if e.path == "model.scale")
    assert scale.findings[0].line == 15 and "CG101 at line 15" in scale.reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only behaviour")
def test_cpu_module_map_keeps_a_model_whose_break_is_outside_it():
    mm = _cpu_partial("log_loss_item.py", depth=0).modules
    assert mm is not None
    assert [(e.path, e.status) for e in mm.modules] == [("model", CLEAN)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only behaviour")
def test_cli_capture_piecewise_and_modules_on_cpu(run_cli, tmp_path):
    out = tmp_path / "o"
    r = run_cli("capture", os.path.join(PARTIAL_DIR, "moe_routing.py"), "--piecewise", "--modules", "1", "--out", out)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "piecewise: would split at line 25" in r.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["piecewise"]["status"] == "cpu-only" and report["modules"]["depth"] == 1
    assert {m["path"]: m["status"] for m in report["modules"]["modules"]}["model.pre"] == "clean"


def test_module_watch_keeps_keyword_arguments_and_lists_container_children(tmp_path):
    """A block called with keyword arguments (a transformer layer's `position_ids=`) keeps them for its capture;
    a ModuleList is never called, so its children are listed one level below it even past the depth."""
    from torch import nn

    from cgtool.pipeline.module_map import ModuleWatch, find_modules
    from cgtool.script.contract import Args

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, *, scale=None, pair=None):
            return self.lin(x) * scale + pair[0]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Block(), Block()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x, scale=torch.ones(4), pair=(torch.zeros(4), 1))
            return x

    net = Net()
    mods = find_modules(Args((), {"model": net}), 1)
    assert [(w.path, w.depth, w.container) for w in mods] == [
        ("model", 0, False), ("model.layers", 1, True), ("model.layers.0", 2, False), ("model.layers.1", 2, False)]
    assert "container (ModuleList)" in mods[1].never_called()
    watch = ModuleWatch(keep_calls=True)
    with watch:
        watch.add(mods)
        net(torch.randn(3, 4))
    first = mods[2]
    assert first.calls == 1 and set(first.last.kwargs) == {"scale", "pair"} and first.last.grad
    assert mods[1].total == 0 and mods[0].total == 1
    net(torch.randn(3, 4))  # hooks removed on exit
    assert first.total == 1
    assert [w.path for w in find_modules(Args((), {"model": net}), 0)] == ["model"]


def test_a_module_call_with_none_arguments_splits_and_rebuilds():
    """A decoder layer's call: tensors, None values (attention_mask=None) and a tuple of tensors. The tensors are
    cut out and put back in their places; None stays None (it once took a tensor's place: StopIteration)."""
    from cgtool.capture.module_graphs import _rebuild, _same_call, _split

    h, cos, sin = torch.ones(2, 3), torch.zeros(3), torch.ones(3)
    args, kwargs = (h,), {"attention_mask": None, "position_embeddings": (cos, sin), "use_cache": False}
    tensors, template = _split(args, kwargs)
    assert [t is x for t, x in zip(tensors, (h, cos, sin))] == [True, True, True]
    a, k = _rebuild(template, tuple(tensors))
    assert a[0] is h and k["attention_mask"] is None and k["position_embeddings"][1] is sin and k["use_cache"] is False
    shapes = [(t.shape, t.dtype, t.device) for t in tensors]
    assert _same_call(template, shapes, (h + 1,), dict(kwargs)) is not None
    assert _same_call(template, shapes, (h,), {**kwargs, "use_cache": True}) is None
    assert _same_call(template, shapes, (h,), {**kwargs, "attention_mask": torch.ones(3)}) is None


def test_verdict_calls_a_pieced_step_whose_replay_differs_unsafe():
    """custom_generator.py on the H100: the pieces replay the random numbers recorded with them (the script's own
    generator is not advanced by graph replay), so the pieced step computes something else than eager."""
    import dataclasses

    from cgtool.model.report_parts import TensorDiff
    from cgtool.render.partial import partial_verdict

    r = _measured()
    r.piecewise = dataclasses.replace(r.piecewise, replay=ReplayCheck("mismatch", "inputs(4)", (
        TensorDiff("output", (64, 10), "torch.float32", 0.26, 0.5, False),)),
                                      timings=Timings(90.0, 135.0, 50))
    v = partial_verdict(r).split("; ")[1]
    assert v == ("piecewise: 2 graphs, 75% of kernels, 0.7× — but the pieced step's replay differs from eager (max abs "
                 "error 0.26): unsafe, not recommended")
