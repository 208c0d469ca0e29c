"""Compiled code found while the script runs (trace/compile_watch.py), wherever it is compiled, and dynamo's graph
breaks and recompiles as findings at the user's line: on this machine's torch, on the CPU (dynamo runs there; the
compile watch builds every compile call with the "eager" backend)."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
from expect_markers import markers, markers_with_imports

from cgtool.checks.compiled import check_compiled
from cgtool.model.compiled import RECOMPILE, CompiledRun, describe_mode
from cgtool.model.compiled_logs import break_kind, break_reason, breaks_from_records, recompile_events

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "samples", "compiled")
RECORDED = os.path.join(ROOT, "tests", "data", "compile", "graph_breaks_cpu.json")
# the same records from the GPU run of the suite (torch 2.11 on an H200, the samples compiled as written)
RECORDED_GPU = os.path.join(ROOT, "tests", "data", "compile", "graph_breaks_gpu_2_11.json")
NEW_SAMPLES = ["imported_factory", "imported_decorator", "module_compile", "sequential_compile", "break_item", "break_branch", "break_print",
               "varying_batch", "no_cudagraphs"]


def write_project(tmp_path, files: dict[str, str]) -> str:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(tmp_path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose compile calls sit in imported modules; its folder on sys.path, its modules forgotten after."""
    before = set(sys.modules)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith(("proj_", "lib_")):
            del sys.modules[name]


def test_watch_finds_compile_calls_wherever_they_are(project):
    import torch

    from cgtool.script.contract import load_script
    from cgtool.trace.compile_watch import CompileWatch

    write_project(project, {
        "proj_models.py": """
            import torch
            from torch import nn
            from torch import compile as tc

            def build():
                return torch.compile(nn.Linear(4, 4), mode="reduce-overhead")

            @torch.compile(mode="max-autotune")
            def deco(x):
                return x * 2

            @torch.compile
            def plain(x):
                return x + 1

            graphs = tc(lambda x: x, options={"triton.cudagraphs": True})
            by_backend = torch.compile(lambda x: x, backend="cudagraphs")
            opt = torch._dynamo.optimize("eager")(lambda x: x - 1)
            """,
        "site-packages/lib_trainer.py": """
            import torch

            def prepare(model):
                return torch.compile(model, mode="reduce-overhead")
            """,
        "proj_step.py": """
            import sys, os, torch
            from torch import nn
            sys.path.insert(0, os.path.join(os.path.dirname(__file__), "site-packages"))
            from proj_models import build, deco
            from lib_trainer import prepare

            MODE = "reduce-" + "overhead"

            def setup(device):
                m = nn.Linear(4, 4)
                m.compile(mode=MODE)
                return {"a": build(), "b": prepare(nn.Linear(4, 4)), "m": m}

            def step(a, b, m, x=None):
                lazy = torch.compile(lambda t: t * 3)
                return lazy(torch.ones(2))
            """,
    })
    with CompileWatch(identity=True) as watch:
        script = load_script(str(project / "proj_step.py"), "step")
        watch.phase = "setup"
        state = script.call_setup(torch.device("cpu"))
        watch.phase = "step"
        script.call_step(state, None)
    assert torch.compile.__module__ == "torch" and not hasattr(torch.compile, "__wrapped__")
    got = [(os.path.basename(s.file), s.line, s.form, s.mode, s.backend, s.cudagraphs, s.phase, s.library)
           for s in watch.sites]
    assert got == [
        ("proj_models.py", 9, "torch.compile", "max-autotune", "inductor", True, "load", False),
        ("proj_models.py", 13, "torch.compile", "", "inductor", False, "load", False),
        ("proj_models.py", 17, "torch.compile", 'options={"triton.cudagraphs": True}', "inductor", True, "load", False),
        ("proj_models.py", 18, "torch.compile", "", "cudagraphs", True, "load", False),
        ("proj_models.py", 19, "torch._dynamo.optimize", "", "eager", False, "load", False),
        ("proj_step.py", 12, "Module.compile()", "reduce-overhead", "inductor", True, "setup", False),
        ("proj_models.py", 7, "torch.compile", "reduce-overhead", "inductor", True, "setup", False),
        ("lib_trainer.py", 5, "torch.compile", "reduce-overhead", "inductor", True, "setup", True),
        ("proj_step.py", 16, "torch.compile", "", "inductor", False, "step", False),
    ]
    lib = watch.sites[7]
    assert lib.called_from is not None and lib.called_from.line == 13 and lib.called_from.file.endswith("proj_step.py")
    assert [s.target for s in watch.sites[:2]] == ["deco", "plain"] and watch.sites[5].target == "Linear"
    assert describe_mode(watch.sites).startswith("torch.compile ") and "max-autotune" in describe_mode(watch.sites)


def test_watch_compiles_for_real_unless_told_otherwise(project):
    import torch

    from cgtool.trace.compile_watch import CompileWatch

    def f(x):
        return x.sin() + 1

    with CompileWatch() as watch:
        real = torch.compile(f, backend="eager")
    with CompileWatch(identity=True):
        same = torch.compile(f, mode="reduce-overhead")
    assert same is f and real is not f and torch.allclose(real(torch.ones(3)), f(torch.ones(3)))
    assert watch.sites[0].backend == "eager" and watch.sites[0].target.endswith("f")


@pytest.mark.parametrize("recorded", [RECORDED, RECORDED_GPU], ids=["cpu-2.13", "gpu-2.11"])
def test_recorded_graph_breaks_parse_to_the_users_line(recorded):
    """dynamo's own `graph_breaks` records from samples/compiled/break_*: on this CPU's torch (2.13, backend
    "eager") and on the GPU suite's H200 (torch 2.11, reduce-overhead as written); tests/gpu/record_dynamo.py."""
    with open(recorded, encoding="utf-8") as fh:
        runs = json.load(fh)["runs"]
    for name, kind in (("break_item", "item"), ("break_branch", "branch"), ("break_print", "print")):
        records = [dict(r, message=r["message"].replace("ROOT/", ROOT + "/")) for r in runs[name]]
        breaks = breaks_from_records(records)
        path = os.path.join(SAMPLES, f"{name}.py")
        assert [(b.frame.line, b.kind) for b in breaks] == [(markers(path)[0][0], kind)]
        assert breaks[0].frame.file == path and breaks[0].frame.source and breaks[0].reason
    item = breaks_from_records([dict(r, message=r["message"].replace("ROOT/", ROOT + "/"))
                                for r in runs["break_item"]])[0]
    assert item.count >= 1 and "Tensor.item()" in item.reason


def test_break_reason_of_older_one_line_records():
    title, detail = break_reason("Graph break in user code at /x/s.py:9\nGraph Break Reason: "
                                 "Tensor.item\nUser code traceback:\n  File \"/x/s.py\", line 9, in f\n    a.item()\n")
    assert (title, detail) == ("Tensor.item", "")
    assert break_kind("Data-dependent branching", "", "if x.sum() > 0:") == "branch"
    assert break_kind("Failed to trace builtin operator", "builtin operator `print` with", "") == "print"


@pytest.mark.parametrize("recorded", [RECORDED, RECORDED_GPU], ids=["cpu-2.13", "gpu-2.11"])
def test_recompile_points_at_the_call_that_passed_the_new_shape(recorded):
    with open(recorded, encoding="utf-8") as fh:
        records = json.load(fh)["runs"]["varying_batch"]
    for r in records:
        r["call"]["file"] = r["call"]["file"].replace("ROOT/", ROOT + "/")
    events = recompile_events(records)
    assert [e.kind for e in events] == [RECOMPILE] and "size mismatch at index 0" in events[0].reason
    path = os.path.join(SAMPLES, "varying_batch.py")
    assert events[0].frame.file == path and events[0].frame.line == markers(path)[0][0]


@pytest.mark.parametrize("name", NEW_SAMPLES)
def test_lint_on_cpu_gives_the_markers(name):
    """The CPU analysis of each sample: the `# expect:` markers (errors and CG7xx), no other error, and the compile
    call found where it is (also in compiled_lib/)."""
    from cgtool.model.job import CaptureSettings, Job
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline.capture_job import capture_job

    path = os.path.join(SAMPLES, f"{name}.py")
    rep = capture_job(Job("capture", path, "step", CaptureSettings(warmup=3, timing=False), True), PhaseLog())
    assert rep.status == "cpu-only", rep.errors
    found = {(f.line, f.rule) for f in rep.findings if f.severity == "error" or f.rule.startswith("CG70")}
    assert found == set(markers(path))
    assert rep.compiled is not None and rep.compiled.sites, "the compile call was not found"
    where = {os.path.relpath(s.file, SAMPLES) for s in rep.compiled.sites}
    if name in ("imported_factory", "varying_batch", "no_cudagraphs"):
        assert where == {os.path.join("compiled_lib", "factory.py")}
    if name == "imported_decorator":
        assert where == {os.path.join("compiled_lib", "ops.py")}
    assert rep.compiled.sites[0].cudagraphs is (name != "no_cudagraphs")


UNSEEN = os.path.join(ROOT, "tests", "data", "unseen_compiled")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(UNSEEN) if f.endswith(".py")))
def test_unseen_scripts_on_cpu(name):
    """Scripts written by someone else to the documented contract (compile calls in an `acme` package): each
    marker, in the script or in the helper module it imports, found at its line; no other error."""
    from cgtool.model.job import CaptureSettings, Job
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline.capture_job import capture_job

    path = os.path.join(UNSEEN, name)
    rep = capture_job(Job("capture", path, "step", CaptureSettings(warmup=3, timing=False), True), PhaseLog())
    assert rep.status == "cpu-only", rep.errors
    found = {(f.file, f.line, f.rule) for f in rep.findings if f.severity == "error" or f.rule.startswith("CG70")}
    assert found == markers_with_imports(path)
    assert rep.compiled is not None and all("acme" in s.file for s in rep.compiled.sites)


def test_varying_batch_finding_names_the_call_and_the_compile_line():
    from cgtool.model.job import CaptureSettings, Job
    from cgtool.model.phase_log import PhaseLog
    from cgtool.pipeline.capture_job import capture_job

    rep = capture_job(Job("capture", os.path.join(SAMPLES, "varying_batch.py"), "step", CaptureSettings(warmup=3), True),
                      PhaseLog())
    cg702 = [f for f in rep.findings if f.rule == "CG702"]
    assert len(cg702) == 1 and "compiled at factory.py:15" in cg702[0].message
    assert not [f for f in rep.findings if f.rule == "CG301"]  # a graph per size, not a wrong-shape replay


def test_checks_place_breaks_and_keep_one_finding_per_line():
    from cgtool.model.compiled import CompileSite, GraphBreak
    from cgtool.model.frame import Frame

    site = CompileSite("/p/m.py", 3, "reduce-overhead", "inductor", True)
    brk = GraphBreak(Frame("/p/s.py", 9, "f", "top = x.item()"), "Unsupported Tensor.item() call", "", 2, "item")
    run = CompiledRun("m", [site], observed=True, breaks=[brk, brk], kernels_outside=4, us_outside=12.0)
    found = check_compiled(run)
    assert [(f.rule, f.line) for f in found] == [("CG705", 9)]
    assert "host waiting for the GPU" in found[0].message and "4 kernels (12 µs)" in found[0].message


def test_watch_costs_no_dynamo_import_and_still_sees_optimize():
    """torch._dynamo takes about a second to import: the watch loads it only when the script does, then wraps
    `optimize` (a fresh interpreter: this process has loaded dynamo long ago); inductor's caches are off."""
    import subprocess

    code = textwrap.dedent("""
        import sys, torch
        from cgtool.trace.compile_watch import CompileWatch, dynamo_off
        with CompileWatch() as watch:
            assert "torch._dynamo" not in sys.modules
            with dynamo_off():
                pass
            assert "torch._dynamo" not in sys.modules
            import torch._dynamo
            torch._dynamo.optimize("eager")(lambda x: x + 1)
            import torch._inductor.config as cfg
            assert cfg.fx_graph_cache is False
        print([s.form for s in watch.sites], torch._dynamo.optimize.__module__)
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["['torch._dynamo.optimize']", "torch._dynamo.eval_frame"]


def test_cpu_findings_on_every_compiled_sample_are_ones_the_gpu_makes(run_cli):
    """`cgtool lint samples/compiled` on the CPU: every finding is one the GPU run reports (a `# expect:` marker,
    which the GPU suite checks); what only the GPU can see (skips, fallbacks, the kernel share) may be missing, but
    nothing the GPU would refute: no error from the tracer's view of code that runs outside the compiled graphs."""
    r = run_cli("lint", SAMPLES, "--format", "json", "-j", "2", cwd=ROOT, timeout=600)
    data = json.loads(r.stdout)
    assert not [s["path"] for s in data["scripts"] if s["errors"]], [s["errors"] for s in data["scripts"]]
    for s in data["scripts"]:
        path = s["path"] if os.path.isabs(s["path"]) else os.path.join(ROOT, s["path"])
        found = {(f["file"], f["line"], f["rule"]) for f in s["findings"]}
        assert found <= markers_with_imports(path), (path, sorted(found - markers_with_imports(path)))
