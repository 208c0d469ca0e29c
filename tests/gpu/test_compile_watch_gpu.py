"""torch.compile wherever the project calls it, on a real GPU (issue: compiled code found at run time): the samples
with compile calls in imported modules, Module.compile(), graph breaks, a varying batch and a compile without CUDA
graphs, plus scripts written by someone else to the documented contract (tests/data/unseen_compiled). Each is
compared with plain PyTorch on the same script (compiled_truth.py, a fresh process): the graphs torch records and
its graph breaks. A table row per script goes to $OUT/gpu-results.txt when $OUT is set."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT
from expect_markers import markers_with_imports
from gpu.runs import cgtool_run, read_json, save_artifact

pytestmark = pytest.mark.gpu
SAMPLES = os.path.join(ROOT, "samples", "compiled")
UNSEEN = os.path.join(ROOT, "tests", "data", "unseen_compiled")
NEW = ["imported_factory", "imported_decorator", "module_compile", "sequential_compile", "break_item", "break_branch", "break_print",
       "varying_batch", "no_cudagraphs"]
SCRIPTS = [os.path.join(SAMPLES, f"{n}.py") for n in NEW] + sorted(
    os.path.join(UNSEEN, f) for f in (os.listdir(UNSEEN) if os.path.isdir(UNSEEN) else []) if f.endswith(".py"))


def expected(path: str) -> set[tuple[str, int, str]]:
    return markers_with_imports(path)


def table_row(name: str, d: dict, truth: dict) -> str:
    c = d.get("compiled") or {}
    sites = "; ".join(f"{os.path.relpath(s['file'], ROOT)}:{s['line']} ({s['form']}, {s['phase']}, "
                      f"{'graphs' if s['cudagraphs'] else 'no graphs'})" for s in c.get("sites", []))
    breaks = "; ".join(f"{os.path.basename((b.get('frame') or {}).get('file', '?'))}:{(b.get('frame') or {}).get('line')}"
                       f" {b['reason'][:45]}" for b in c.get("breaks", [])) or "-"
    rerec = "; ".join(f"{os.path.basename(f['file'] or '')}:{f['line']}" for f in d["findings"] if f["rule"] == "CG702") or "-"
    share = c.get("kernel_share")
    t = c.get("timings_us") or {}
    timing = " / ".join(f"{k} {v:.0f}us" for k, v in t.items())
    if d.get("timings"):
        timing = f"compiled {d['timings']['eager_us']:.0f}us / cgtool replay {d['timings']['replay_us']:.0f}us"
    return (f"{name}: ran as {c.get('mode')} [{d['status']}]; compiled at {sites}; graphs {c.get('graphs_recorded')} "
            f"(torch alone: {truth.get('tree_graphs')}); breaks {breaks} (torch alone: {', '.join(os.path.basename(b) for b in truth.get('break_lines', [])) or '-'}); "
            f"CG702 at {rerec}; kernels in graphs {'-' if share is None else f'{share:.0%}'}, Triton/step "
            f"{c.get('triton_kernels')}; timing {timing or '-'}; first steady step {c.get('first_steady_s')} s")


def run_one(path: str, work: str) -> tuple[dict, dict | None, str]:
    """(plain PyTorch's view, cgtool's report, cgtool's output) of one script."""
    truth_run = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "compiled_truth.py"), path],
                               capture_output=True, text=True, timeout=400, cwd=os.path.dirname(path))
    try:
        truth = json.loads(truth_run.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        truth = {"error": truth_run.stderr[-2000:]}
    out = os.path.join(work, "compile-watch", os.path.relpath(path, ROOT).replace(os.sep, "_"))
    r = cgtool_run("capture", path, "--out", out, "--timeout", "400", timeout=500)
    save_artifact("compile-watch.txt", f"===== {os.path.relpath(path, ROOT)}: exit {r.returncode}\n"
                                       f"{(r.stdout + r.stderr)[-5000:]}")
    return truth, read_json(os.path.join(out, "report.json")), r.stdout


@pytest.fixture(scope="module")
def runs(work):
    """Every script, plain PyTorch then cgtool, four scripts at a time (timings are indicative)."""
    with ThreadPoolExecutor(4) as pool:
        return dict(zip(SCRIPTS, pool.map(lambda p: run_one(p, work), SCRIPTS)))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: os.path.relpath(p, ROOT))
def test_compiled_where_the_project_compiles(path, runs, measured):
    truth, d, stdout = runs[path]
    assert "error" not in truth, truth
    assert d is not None, stdout[-3000:]
    measured(table_row(os.path.relpath(path, ROOT), d, truth))
    c = d.get("compiled")
    assert c is not None and c["sites"], f"compiled code not found:\n{stdout[-3000:]}"
    found = {(f["file"], f["line"], f["rule"]) for f in d["findings"]}
    want = expected(path)
    assert want <= found, f"missing {sorted(want - found)}; found {sorted(found)}"
    errors = {(f["file"], f["line"], f["rule"]) for f in d["findings"] if f["severity"] == "error"}
    assert errors <= want, f"errors beyond the markers: {sorted(errors - want)}"
    graphing = any(s["cudagraphs"] for s in c["sites"])
    if graphing and truth["unique_graphs"] == 0:  # torch compiled nothing (Module.compile() of nn.Sequential)
        assert d["status"] == "compiled" and c["dynamo_graphs"] == 0 and c["graphs_recorded"] == 0
        assert truth["tree_graphs"] == 0 and any(r == "CG701" for _, _, r in want)
    elif graphing:
        assert d["status"] == "compiled", stdout[-2000:]
        assert d.get("graph") is None, "cgtool captured the step itself: the uncompiled program"
        assert truth["tree_graphs"] >= 1, f"plain PyTorch recorded no CUDA graph: {truth}"
        assert c["graphs_recorded"] == truth["tree_graphs"], truth  # the same calls, the same graphs
        kernels = [k[0] for g in c.get("graphs", []) for k in g.get("kernels", [])]
        assert any(k.startswith("triton") for k in kernels), f"no Triton kernel in the trees' graphs: {kernels[:8]}"
    else:
        assert d["status"] == "captured" and c["captured_by"] == "cgtool", stdout[-2000:]
        assert c["triton_kernels"] >= 1, "the graph holds no Triton kernel: not the compiled code"
        assert d["replay"]["status"] == "match"
    breaks = {(b["frame"]["file"], b["frame"]["line"]) for b in c.get("breaks", []) if b.get("frame")}
    assert {(f, n) for f, n, rule in want if rule == "CG705"} == breaks
    assert {f"{f}:{n}" for f, n in breaks} == set(truth["break_lines"]), truth


def test_lint_on_the_gpu_gives_capture_s_findings():
    """`cgtool lint` over the same scripts on the GPU: every marker, no error beyond them."""
    r = cgtool_run("lint", *SCRIPTS, "--format", "json", "-j", "4", "--timeout", "400", timeout=900)
    data = json.loads(r.stdout)
    for s in data["scripts"]:
        want = expected(s["path"] if os.path.isabs(s["path"]) else os.path.join(ROOT, s["path"]))
        found = {(f["file"], f["line"], f["rule"]) for f in s["findings"]}
        assert want <= found, (s["path"], sorted(want - found), s["errors"])
        errors = {(f["file"], f["line"], f["rule"]) for f in s["findings"] if f["severity"] == "error"}
        assert errors <= want, (s["path"], sorted(errors - want))


def test_record_dynamo_records_for_the_cpu_fixtures():
    """torch's own graph-break and recompile records on the GPU's torch, kept for the CPU tests' fixtures
    ($OUT/graph_breaks_gpu.json)."""
    script = os.path.join(os.path.dirname(__file__), "record_dynamo.py")
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    runs = json.loads(r.stdout.strip().splitlines()[-1])
    assert all(runs[k] for k in ("break_item", "break_branch", "break_print", "varying_batch")), runs
