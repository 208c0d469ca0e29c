"""Module-map verdicts (issue 26): identical Python state for the comparison (capture/host_state.py), what a module's
eager call did (in-place input updates, host attributes, autocast), which graphed module diverges
(pipeline/module_check.py), library-only CPU findings tried on the GPU, and the plan as code (render/plan.py).
The GPU side: tests/gpu/test_modules_gpu.py."""

from __future__ import annotations

import importlib.util
import io
import json
import os

import pytest
import torch
from conftest import ROOT
from rich.console import Console

from cgtool.capture.host_state import restore_attributes, save_attributes
from cgtool.model.finding import Finding
from cgtool.model.partial import DIVERGES, FAILS, GRAPHED, MEASURED, ModuleEntry, ModuleMap
from cgtool.model.report import ReplayCheck, TensorDiff, Timings

SAMPLES = os.path.join(ROOT, "samples", "modules")


def _sample(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(SAMPLES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_attributes_of_setup_state_are_put_back_in_place():
    """router_counter.py's counter advanced by the eager run was not put back before the graphed run (the issue's
    first row: a 0.0888 "mismatch" that plain PyTorch does not show). Containers are restored in place, so a hook
    handle's reference to its dict still removes the hook."""
    model = _sample("router_counter").Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    log: list[float] = []
    handle = model.head.register_forward_hook(lambda *a: None)
    hooks = model.head._forward_hooks
    saved = save_attributes(((), {"model": model, "opt": opt, "log": log}))
    model.counter.calls += 2
    log.append(1.0)
    model.counter.extra = "added"
    opt.param_groups[0]["lr"] = 5.0
    opt.state[model.head.weight]["momentum_buffer"] = torch.zeros(1)
    restore_attributes(saved)
    assert model.counter.calls == 0 and log == [] and not hasattr(model.counter, "extra")
    assert opt.param_groups[0]["lr"] == 0.1 and len(opt.state) == 0
    assert model.head._forward_hooks is hooks
    handle.remove()
    assert not model.head._forward_hooks


def test_containers_nothing_changed_are_not_rewritten():
    """Only what the run changed is written back: a dict whose contents are the saved ones is not touched (torch.compile
    guards on a module's __dict__ would see a rewrite as a change and recompile the pieced step)."""

    class Counting(dict):
        writes = 0

        def clear(self):
            Counting.writes += 1
            super().clear()

        def update(self, *a, **k):
            Counting.writes += 1
            super().update(*a, **k)

    same, changed = Counting(a=1, b=[2]), Counting(a=1)
    saved = save_attributes(((), {"same": same, "changed": changed}))
    changed["a"] = 3
    restore_attributes(saved)
    assert changed == {"a": 1} and same == {"a": 1, "b": [2]} and Counting.writes == 1


def test_the_watch_sees_an_input_updated_in_place_and_a_host_counter():
    from cgtool.pipeline.module_map import ModuleWatch, find_modules
    from cgtool.script.contract import Args

    mixer = _sample("inplace_input").Mixer()
    counter = _sample("router_counter").CallCounter()
    found = find_modules(Args((), {"mixer": mixer, "counter": counter}), 0)
    watch = ModuleWatch(keep_calls=True)
    watch.add(found)
    with watch, torch.no_grad():
        mixer(torch.randn(2, 512))
        counter(torch.randn(2, 3))
    by = {w.path: w for w in found}
    assert by["mixer"].changed_inputs == {"args[0]"} and not by["mixer"].changed_attributes
    assert by["counter"].changed_attributes == {"calls"} and not by["counter"].changed_inputs
    call = by["mixer"].last
    assert (call.grad, call.grad_enabled, call.inference, call.autocast) == (False, False, False, None)


def _diff(name: str, err: float) -> TensorDiff:
    return TensorDiff(name, (8, 64, 1000), "torch.float32", err, err, err == 0)


class _Graphed:
    def __init__(self, path: str) -> None:
        self.path = path


def test_the_module_that_differs_alone_is_named_and_left_out():
    """inplace_input.py: the four modules graphed together differ from eager; graphed one at a time only `mixer`
    does. It is marked with the cause the watch saw, and the other three are checked together."""
    from cgtool.pipeline.module_check import find_diverging
    from cgtool.pipeline.module_map import Watched

    graphed = [_Graphed(p) for p in ("embed", "body", "mixer", "head")]
    entries = [ModuleEntry(g.path, "M", 0, GRAPHED) for g in graphed]
    mixer = Watched("mixer", None, 0, changed_inputs={"args[0]"})
    checked = []

    def check(chosen):
        paths = [g.path for g in chosen]
        checked.append(paths)
        bad = "mixer" in paths
        return ReplayCheck("mismatch" if bad else "match", "inputs(4)", (_diff("output", 0.8 if bad else 0.0),))

    whole = check(graphed)
    marked, chosen, replay = find_diverging(entries, graphed, whole, check, [mixer])
    assert [g.path for g in chosen] == ["embed", "body", "head"] and replay.status == "match"
    assert checked[1:] == [["embed"], ["body"], ["mixer"], ["head"], ["embed", "body", "head"]]
    m = next(e for e in marked if e.path == "mixer")
    assert m.status == DIVERGES and "updates its input `args[0]` in place" in m.reason and "0.8" in m.reason
    assert [e.status for e in marked if e.path != "mixer"] == [GRAPHED] * 3


def test_modules_that_differ_only_together_are_found_by_growing_the_set():
    """Every module matches alone, but `b` and `d` together differ (say, one writes a buffer the other reads): the
    set grows in the map's order, `d` is left out when added beside `b`, and the rest is the recommended set."""
    from cgtool.pipeline.module_check import find_diverging

    graphed = [_Graphed(p) for p in ("a", "b", "c", "d", "e")]
    entries = [ModuleEntry(g.path, "M", 0, GRAPHED) for g in graphed]
    checked = []

    def check(chosen):
        paths = [g.path for g in chosen]
        checked.append(paths)
        bad = {"b", "d"} <= set(paths)
        return ReplayCheck("mismatch" if bad else "match", "x", (_diff("output", 0.2 if bad else 0.0),))

    marked, chosen, replay = find_diverging(entries, graphed, check(graphed), check, [])
    assert [g.path for g in chosen] == ["a", "b", "c", "e"] and replay.status == "match"
    assert checked[6:] == [["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"], ["a", "b", "c", "e"]]
    d = next(e for e in marked if e.path == "d")
    assert d.status == DIVERGES and "together with `a`, `b`, `c` (alone it matches)" in d.reason
    assert [e.status for e in marked if e.path != "d"] == [GRAPHED] * 4


def test_no_smaller_set_matching_keeps_the_set():
    from cgtool.pipeline.module_check import find_diverging

    graphed = [_Graphed("a"), _Graphed("b")]
    entries = [ModuleEntry(g.path, "M", 0, GRAPHED) for g in graphed]

    def check(chosen):
        return ReplayCheck("mismatch" if len(chosen) == 2 else "skipped", "x", (_diff("output", 0.1),))

    marked, chosen, replay = find_diverging(entries, graphed, check(graphed), check, [])
    assert marked == entries and chosen == graphed and replay is None


def test_library_only_findings_that_do_not_break_capture_are_tried_on_the_gpu():
    """The issue's Llama row: a CG402 inside transformers/cache_utils.py marked the decoder layers as failing
    without the GPU confirming it. A sync finding is never tried (a failed capture can spoil CUDA)."""
    from cgtool.pipeline.modules_job import library_only

    lib = Finding("CG402", "host-input", "error", "m", "/s.py", 9, library="transformers/cache_utils.py:80 in update")
    mine = Finding("CG402", "host-input", "error", "m", "/s.py", 52)
    sync = Finding("CG101", "sync", "error", "m", "/s.py", 9, library="transformers/x.py:1 in f")
    assert library_only(ModuleEntry("l", "L", 2, FAILS, findings=(lib,)))
    assert not library_only(ModuleEntry("l", "L", 2, FAILS, findings=(lib, mine)))
    assert not library_only(ModuleEntry("l", "L", 2, FAILS, findings=(sync,)))


def _plan_map() -> ModuleMap:
    from cgtool.capture.module_graphs import Call, describe_call

    x = torch.randn(32, 3, 64, 64).to(memory_format=torch.channels_last)
    resnet = describe_call(Call((x,), {}, True, True, False, "bfloat16"))
    h, cos = torch.randn(2, 64, 128, requires_grad=True), torch.randn(64, 32)
    layer = describe_call(Call((h,), {"attention_mask": None, "position_embeddings": (cos, cos), "cache": object(),
                                      "use_cache": False}, True))
    ids = describe_call(Call((torch.zeros(8, 64, dtype=torch.long),), {}, False, False, True))
    return ModuleMap(MEASURED, 2, (
        ModuleEntry("model", "ResNet", 0, GRAPHED, training=True, call=resnet),
        ModuleEntry("lm.model.layers.0", "LlamaDecoderLayer", 3, GRAPHED, training=True, call=layer),
        ModuleEntry("embed", "Embedding", 0, GRAPHED, call=ids),
        ModuleEntry("mixer", "Mixer", 0, DIVERGES, "it updates its input `args[0]` in place", call=ids)),
        ("model", "lm.model.layers.0", "embed"), ReplayCheck("match", "inputs(4)"), Timings(300.0, 100.0, 50),
        tried=("model", "lm.model.layers.0", "embed", "mixer"),
        tried_replay=ReplayCheck("mismatch", "inputs(4)", (_diff("output", 0.5),)))


def test_the_plan_is_python_with_the_call_modes_shapes_and_layouts():
    from cgtool.render.plan import module_source, plan_code

    m = ModuleMap.from_json(json.loads(json.dumps(_plan_map().to_json())))
    code = plan_code(m, "s.py")
    compile(code, "modules-plan.py", "exec")
    assert module_source("lm.model.layers.0") == "lm.model.layers[0]"
    assert ('with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):  # as the step calls it\n'
            '    graph_module(model, (torch.randn((32, 3, 64, 64), device="cuda", dtype=torch.float32)'
            '.to(memory_format=torch.channels_last),), {}, backward=True)') in code
    assert "'attention_mask': None" in code and "'use_cache': False" in code and "TODO: <object>" in code
    assert "requires_grad_()" in code and "with torch.inference_mode():" in code
    assert 'torch.zeros((8, 64), device="cuda", dtype=torch.int64)' in code
    assert "graph_module(mixer" not in code and "import cgtool" not in code
    assert "measured 3.00× faster" in code


def test_no_plan_for_a_set_whose_graphed_step_differs_from_eager():
    """modules-plan.py is written for a set that matches eager, or whose replay was not checked (said in its
    header); never for one the check found different."""
    from dataclasses import replace

    from cgtool.render.plan import plan_calls, plan_code

    m = _plan_map()
    bad = replace(m, replay=ReplayCheck("mismatch", "inputs(4)", (_diff("output", 0.5),)))
    assert plan_code(bad, "s.py") == "" and plan_calls(bad) == []
    unchecked = plan_code(replace(m, replay=None), "s.py")
    assert "was not checked against eager" in unchecked and "graph_module(model" in unchecked


def test_plan_samples_a_padding_mask_as_all_true_and_grad_only_with_a_backward():
    """A bool mask sampled as zeros would mask every token (SDPA then makes NaNs in the warmup); a forward-only
    graph (transformers' rotary embedding: its input requires grad, its outputs do not) takes plain tensors."""
    from cgtool.capture.module_graphs import Call, describe_call
    from cgtool.render.plan import _graph_call

    h = torch.randn(4, 64, 128, requires_grad=True)
    layer = describe_call(Call((h,), {"attention_mask": torch.ones(4, 1, 64, 64, dtype=torch.bool)}, True))
    rotary = describe_call(Call((h,), {"position_ids": torch.zeros(1, 64, dtype=torch.long)}, False))
    line = _graph_call(ModuleEntry("model.model.layers.0", "L", 3, GRAPHED, call=layer), layer)[0]
    assert 'torch.ones((4, 1, 64, 64), device="cuda", dtype=torch.bool)' in line and "requires_grad_()" in line
    line = _graph_call(ModuleEntry("model.model.rotary_emb", "R", 2, GRAPHED, call=rotary), rotary)[0]
    assert "requires_grad_" not in line and line.endswith("backward=False)")


def test_the_map_names_the_left_out_module_and_prints_the_plan():
    from cgtool.render.partial import partial_verdict, render_modules
    from cgtool.model.report import CAPTURE_FAILED, Report

    m = _plan_map()
    buf = io.StringIO()
    render_modules(m, Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert "diverges" in text and "left out, each differs from eager when graphed alone: `mixer`" in text
    assert "bfloat16 autocast" in text and "plan" in text and "graph_module(embed" in text
    v = partial_verdict(Report("/x/s.py", "step", status=CAPTURE_FAILED, device="cuda", modules=m))
    assert v.endswith("graphing `model` and `lm.model.layers.0` and `embed`: 3.0×, matches eager: recommended (modules-plan.py); left out: `mixer` "
                      "(differs from eager when graphed)")


def test_plan_file_written_beside_the_report(tmp_path):
    from cgtool.model.report import CAPTURE_FAILED, Report
    from cgtool.render.outputs import write_outputs

    r = Report("/x/s.py", "step", status=CAPTURE_FAILED, device="cuda", modules=_plan_map())
    write_outputs(r, str(tmp_path), render_svg=False)
    assert "graph_module(" in (tmp_path / "modules-plan.py").read_text() and "modules-plan.py" in r.outputs


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only behaviour")
def test_cpu_map_of_the_router_counter_sample():
    from cgtool.model.job import PARTIAL, Job, PartialSettings
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline import run_job

    job = Job(PARTIAL, os.path.join(SAMPLES, "router_counter.py"), "step", PartialSettings(warmup=2, modules=1))
    mm = run_job(job, PhaseLog()).partial.modules
    status = {e.path: e.status for e in mm.modules}
    assert status["model.router"] == FAILS and status["model.counter"] == FAILS
    assert [p for p, s in status.items() if s == "clean"] == [
        "model.embed", "model.blocks.0", "model.blocks.1", "model.blocks.2", "model.blocks.3", "model.head"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only behaviour")
def test_cpu_map_of_the_llama_sample_leaves_the_decoder_layers_to_try():
    """llama_train.py: the guard's sync (a pre-hook on the first decoder layer) is inside `model` and `model.model`,
    not inside the layer (the hook runs before the layer's call): the two fail, every part of them is tried."""
    pytest.importorskip("transformers")
    from cgtool.model.job import PARTIAL, Job, PartialSettings
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline import run_job

    job = Job(PARTIAL, os.path.join(SAMPLES, "llama_train.py"), "step", PartialSettings(warmup=2, modules=2))
    mm = run_job(job, PhaseLog()).partial.modules
    status = {e.path: e.status for e in mm.modules}
    assert status["model"] == FAILS and status["model.model"] == FAILS
    assert "line 21" in next(e.reason for e in mm.modules if e.path == "model.model")
    assert [p for p, s in status.items() if s == "clean"] == [
        "model.model.embed_tokens", *[f"model.model.layers.{i}" for i in range(4)], "model.model.norm",
        "model.model.rotary_emb", "model.lm_head"]


def test_lint_finds_what_the_module_samples_mark(run_cli):
    """The samples' `# expect:` lines are what `cgtool lint` finds (the router's `nonzero`, the counter's host value,
    the Llama step's guard and loss log) and nothing else; the in-place sample has no finding (its difference shows
    only when a module is graphed)."""
    from expect_markers import markers

    names = ["router_counter.py", "inplace_input.py", "llama_train.py"]
    r = run_cli("lint", *[os.path.join(SAMPLES, n) for n in names], "--format", "json", "-j", "2", "--timeout", "240",
                timeout=300)
    assert r.stdout.strip(), r.stderr[-2000:]
    data = json.loads(r.stdout)
    by = {os.path.basename(s["path"]): s for s in data["scripts"]}
    for n in names:
        found = {(f["line"], f["rule"]) for f in by[n]["findings"] if f["severity"] == "error"}
        assert found == set(markers(os.path.join(SAMPLES, n))), (n, found, by[n].get("status"), r.stderr[-1500:])


def test_the_modules_inside_a_diverging_one_are_graphed_in_its_place():
    """inplace_input.py: `mixer` differs when graphed whole, so `mixer.lin` (skipped while its parent was graphed)
    is graphed instead; the step still matches with it, and the recommended set grows by it."""
    from cgtool.model.partial import SKIPPED
    from cgtool.pipeline.module_map import Watched
    from cgtool.pipeline.modules_job import inside_diverging

    paths = ("embed", "body", "mixer", "mixer.lin", "head")
    watched = [Watched(p, None, p.count(".")) for p in paths]
    entries = [ModuleEntry(p, "M", p.count("."), DIVERGES if p == "mixer" else SKIPPED if p == "mixer.lin"
                           else GRAPHED) for p in paths]
    chosen = [_Graphed(p) for p in ("embed", "body", "head")]
    asked = []

    def graph(under):
        asked.append([w.path for w in under])
        return [ModuleEntry("mixer.lin", "Linear", 1, GRAPHED)], [_Graphed("mixer.lin")]

    def check(chosen):
        return ReplayCheck("mismatch" if "mixer" in [g.path for g in chosen] else "match", "x", ())

    ok = ReplayCheck("match", "x", ())
    marked, kept, replay, more = inside_diverging(entries, chosen, ok, check, watched, graph)
    assert asked == [["mixer.lin"]] and [g.path for g in kept] == ["embed", "body", "head", "mixer.lin"]
    assert replay.status == "match" and [g.path for g in more] == ["mixer.lin"]
    assert {e.path: e.status for e in marked}["mixer.lin"] == GRAPHED

    def check_lin_bad(chosen):
        return ReplayCheck("mismatch" if "mixer.lin" in [g.path for g in chosen] else "match", "x",
                           (_diff("output", 0.3),))

    marked, kept, replay, more = inside_diverging(entries, chosen, ok, check_lin_bad, watched, graph)
    assert [g.path for g in kept] == ["embed", "body", "head"] and replay.status == "match"
    assert {e.path: e.status for e in marked}["mixer.lin"] == DIVERGES
