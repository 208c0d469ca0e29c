"""Issue 21 on the GPU: what graphs cost in memory, per size, and which sizes to capture.

Truth first: tests/gpu/memory_truth.py captures in plain PyTorch (no cgtool) and reads the graph's private pool
from torch.cuda.memory_snapshot(). Against it: cgtool bench's pool bytes on real models of the corpus and
cgtool capture's trees pool on a compiled step (within 5%); a decoder's size sweep with shared-pool totals
(8 sizes); a plan for one histogram and budget, captured in plain PyTorch and compared with the prediction.
Tables go to $OUT/issue21-tables.md, the plan's plot to $OUT/issue21-plan.svg."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from gpu.runs import WORK, cgtool_run, read_json, save_artifact

pytestmark = pytest.mark.gpu
MiB = 2**20
MODELS = ["samples/mlp_inference.py", "tests/realworld/clean/tv_resnet18_infer.py",
          "tests/realworld/clean/hf_bert_padded_infer.py", "tests/realworld/clean/hf_llama_infer.py",
          "tests/realworld/clean/tv_vit_infer.py", "tests/realworld/clean/hf_gpt2_train.py"]
COMPILED = "samples/compiled/clean_inference.py"
DECODER = "tests/gpu/scripts/llama_sizes.py"
SIZES = "1:128"  # 1, 2, 4, ..., 128: 8 sizes
HISTOGRAM = {1: 30, 2: 12, 3: 20, 5: 10, 12: 15, 20: 10, 40: 8, 100: 5}


def truth(*args: str, timeout: float = 300) -> dict:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "memory_truth.py"), *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def table(title: str, header: list[str], rows: list[list[object]]) -> None:
    """A markdown table appended to $OUT/issue21-tables.md (and the results file)."""
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    save_artifact("issue21-tables.md", "\n".join(lines) + "\n")


def mib(n: float | None) -> str:
    return "-" if n is None else f"{n / MiB:.2f} MiB"


@pytest.fixture(scope="module")
def pool_rows() -> list[list[object]]:
    rows: list[list[object]] = []
    yield rows
    table("Graph pool: cgtool bench against plain PyTorch's allocator snapshot",
          ["script", "cgtool pool (reserved)", "cgtool in live tensors", "static in / out", "capture peak",
           "PyTorch snapshot", "reserved delta (old figure's method)", "error"], rows)


@pytest.mark.parametrize("script", MODELS + [COMPILED], ids=os.path.basename)
def test_pool_bytes_match_plain_pytorch(script, pool_rows, measured):
    if script == COMPILED:
        out = os.path.join(WORK, "issue21", "compiled")
        r = cgtool_run("capture", script, "--out", out, "--timeout", "300", timeout=400)
        report = read_json(os.path.join(out, "report.json")) or {}
        c = report.get("compiled") or {}
        ours, used, detail = c.get("pool_bytes"), c.get("pool_allocated_bytes"), "-"
        peak = None
        real = truth("compiled", script)
    else:
        r = cgtool_run("bench", script, "--iters", "200", "--json", timeout=300)
        res = (json.loads(r.stdout)["results"] or [{}])[0] if r.stdout.strip().startswith("{") else {}
        mem = res.get("memory") or {}
        ours, used, peak = res.get("pool_bytes"), mem.get("pool_allocated"), mem.get("capture_peak_bytes")
        detail = f"{mib(mem.get('static_input_bytes'))} / {mib(mem.get('static_output_bytes'))}"
        real = truth("pool", script)
    assert ours is not None, (r.stdout + r.stderr)[-3000:]
    err = ours / real["pool_reserved"] - 1 if real["pool_reserved"] else float("inf")
    pool_rows.append([os.path.basename(script), mib(ours), mib(used), detail, mib(peak), mib(real["pool_reserved"]),
                      mib(real.get("reserved_delta")), f"{err:+.1%}"])
    measured(f"{script}: cgtool {ours} B, snapshot {real['pool_reserved']} B ({err:+.1%})", cgtool=ours, truth=real)
    assert real["pool_reserved"] > 0 and abs(err) <= 0.05


@pytest.fixture(scope="module")
def sweep() -> dict:
    """cgtool bench of the decoder over 8 sizes, with the plan for HISTOGRAM (no budget) and its plot."""
    os.makedirs(os.path.join(WORK, "issue21"), exist_ok=True)
    hist = os.path.join(WORK, "issue21", "histogram.json")
    with open(hist, "w") as f:
        json.dump(HISTOGRAM, f)
    out = os.path.join(WORK, "issue21", "bench.json")
    plot = os.path.join(os.environ.get("OUT") or os.path.join(WORK, "issue21"), "issue21-plan-unlimited.svg")
    r = cgtool_run("bench", DECODER, "--sizes", SIZES, "--iters", "200", "--histogram", hist, "--out", out,
                   "--plot", plot, timeout=500)
    save_artifact("issue21-bench.txt", r.stdout + r.stderr)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert os.path.exists(plot) and "capture sizes for the expected batches" in r.stdout
    return {"report": read_json(out), "histogram_file": hist, "text": r.stdout}


def test_sizes_table_and_shared_pool_totals(sweep, measured):
    doc = sweep["report"]
    results = doc["results"]
    assert len(results) >= 8
    table("Decoder (Llama, 4 layers, seq 32) by batch size: cgtool bench --sizes 1:128",
          ["size", "pool reserved", "in live tensors", "capture peak", "capture", "instantiate", "eager wall",
           "replay wall", "speedup"],
          [[r["size"], mib(r["pool_bytes"]), mib(r["memory"]["pool_allocated"]), mib(r["memory"]["capture_peak_bytes"]),
            f"{r['capture_ms']:.1f} ms", f"{r['instantiate_ms']:.1f} ms", f"{r['eager']['wall']['median']:.0f} µs",
            f"{r['replay']['wall']['median']:.0f} µs", f"{r['speedup_wall']['point']:.2f}×"] for r in results])
    sp = doc["shared_pool"]
    table("All sizes in one pool (captured largest first) against separate pools",
          ["sizes", "shared pool", "in live tensors", "separate pools", "capture (all)"],
          [[len(sp["sizes"]), mib(sp["pool_reserved"]), mib(sp["pool_allocated"]), mib(sp["separate_reserved"]),
            f"{sp['capture_ms']:.0f} ms"]])
    measured("shared pool", shared=sp["pool_reserved"], separate=sp["separate_reserved"])
    assert all(r["pool_bytes"] > 0 for r in results)
    assert sp["pool_reserved"] <= sp["separate_reserved"]
    assert sp["pool_reserved"] >= max(r["pool_bytes"] for r in results) * 0.95
    for r in results:  # the floor is one replay cannot beat
        assert r["replay_floor_share"] <= 1.0 + 1e-9


def test_plan_against_plain_pytorch(sweep, measured):
    """Plan for HISTOGRAM under a budget that binds, capture the recommended sizes in plain PyTorch, and compare."""
    from cgtool.bench.plot import plot_plan
    from cgtool.bench.result import BenchReport
    from cgtool.bench.size_plan import compare_plans, model_of_report

    report = BenchReport.from_json(sweep["report"])
    model = model_of_report(report)
    hist = {int(b): float(w) for b, w in HISTOGRAM.items()}
    unlimited = compare_plans(model, hist, float("inf"))[0][1]
    budget = 0.7 * unlimited.memory_bytes
    plans = compare_plans(model, hist, budget)
    plan = plans[0][1]
    out = os.environ.get("OUT")
    if out:
        plot_plan(report, plans, os.path.join(out, "issue21-plan.svg"))
    real = truth("sizes", DECODER, sweep["histogram_file"], ",".join(map(str, plan.sizes)), timeout=400)
    mem_err = plan.memory_bytes / real["pool_reserved"] - 1
    speed_err = plan.speedup / real["speedup"] - 1
    table(f"Plan for histogram {HISTOGRAM}, budget {mib(budget)}",
          ["set", "sizes", "memory", "capture", "mean step", "speedup"],
          [[label, ", ".join(map(str, p.sizes)), mib(p.memory_bytes), f"{p.capture_ms:.0f} ms", f"{p.mean_us:.0f} µs",
            f"{p.speedup:.2f}×"] for label, p in plans])
    table("The recommended set captured in plain PyTorch (one pool, largest first) against the prediction",
          ["", "memory", "mean step", "eager mean", "speedup"],
          [["predicted", mib(plan.memory_bytes), f"{plan.mean_us:.0f} µs", f"{plan.eager_mean_us:.0f} µs", f"{plan.speedup:.2f}×"],
           ["measured", mib(real["pool_reserved"]), f"{real['mean_us']:.0f} µs", f"{real['eager_mean_us']:.0f} µs",
            f"{real['speedup']:.2f}×"],
           ["error", f"{mem_err:+.1%}", f"{plan.mean_us / real['mean_us'] - 1:+.1%}",
            f"{plan.eager_mean_us / real['eager_mean_us'] - 1:+.1%}", f"{speed_err:+.1%}"]])
    table("Measured per batch (plain PyTorch)", ["batch", "weight", "captured size", "eager", "step"],
          [[r["batch"], r["weight"], r["captured"], f"{r['eager_us']:.0f} µs", f"{r['step_us']:.0f} µs"] for r in real["rows"]])
    measured("plan", predicted=plan.to_json(), measured={k: v for k, v in real.items() if k != "rows"},
             memory_error=mem_err, speedup_error=speed_err)
    assert plan.memory_bytes <= budget and plan.sizes
    # the prediction interpolates between measured sizes and the allocator rounds segments (2 and 20 MiB):
    # the tables state the error; these bounds only catch a model that is wrong in kind
    assert abs(mem_err) <= 0.5 and abs(speed_err) <= 0.3
