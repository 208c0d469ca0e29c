"""Partial capture on the GPU (docs/partial.md), about 4 minutes: the torch APIs it relies on (plain torch,
tests/gpu/partial_truth.py), the module map (`capture --modules`) of a toy model and a Llama training step, `bench
--piecewise` on every script of samples/partial/, and `capture --piecewise` of item_sync (verdict, a DOT per piece).
The piecewise runs over the hazard samples and the library hazards: test_piecewise_gpu.py."""

import glob
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from gpu.piecewise import judge_modules, judge_pieces
from gpu.runs import read_json, save_artifact

pytestmark = pytest.mark.gpu
PROBES = ["compiled", "profiler", "graphed_module"]
PARTIAL = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "samples", "partial", "*.py")))


@pytest.mark.parametrize("probe", PROBES)
def test_torch_api_partial_capture_relies_on(probe, measured):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "partial_truth.py"), probe],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("PROBE ")]
    save_artifact("partial_truth.txt", r.stdout + r.stderr[-3000:])
    assert lines, r.stderr[-2000:]
    measured(lines[0][6:400])
    assert "FAILED" not in lines[0]


@pytest.mark.parametrize("script,depth", [("samples/partial/module_breaks.py", "1"),
                                          ("samples/partial/llama_loss_log.py", "2"),
                                          ("tests/realworld/hazards/hf_mixtral_moe_eager.py", "3")])
def test_module_map(script, depth, cgtool, work, measured):
    out = os.path.join(work, "capture", "modules_" + os.path.basename(script)[:-3])
    r = cgtool("capture", script, "--modules", depth, "--out", out, "--timeout", "90", timeout=200)
    save_artifact("partial.txt", f"== capture {script} --modules {depth} exit {r.returncode}\n{r.stdout[-6000:]}")
    m = (read_json(os.path.join(out, "report.json")) or {}).get("modules")
    assert m, f"no module map; exit {r.returncode}: {r.stderr[-300:]}"
    ok, detail = judge_modules(m)
    measured(detail)
    assert ok


@pytest.mark.parametrize("script", PARTIAL)
def test_bench_piecewise(script, cgtool, measured):
    r = cgtool("bench", script, "--piecewise", "--budget-s", "2", "--json", "--timeout", "90", timeout=200)
    save_artifact("partial.txt", f"== bench {script} --piecewise exit {r.returncode}\n{r.stderr[-5000:]}")
    d = json.loads(r.stdout)
    ok, detail = judge_pieces(d)
    measured(f"exit {r.returncode}; {detail}")
    assert ok is not False


def test_capture_piecewise_verdict_and_a_dot_per_piece(cgtool, work):
    out = os.path.join(work, "capture", "partial_item_sync")
    r = cgtool("capture", "samples/hazards/item_sync.py", "--piecewise", "--out", out, "--timeout", "90", timeout=200)
    verdict = [ln for ln in r.stdout.splitlines() if ln.startswith("whole step")]
    dots = sorted(f for f in os.listdir(out) if f.startswith("graph-piece-")) if os.path.isdir(out) else []
    assert verdict, r.stdout[-3000:]
    assert dots
