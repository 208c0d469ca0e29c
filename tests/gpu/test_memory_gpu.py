"""Issue 21 on the GPU: what graphs cost in memory, per size, and which sizes to capture.

Truth first: tests/gpu/memory_truth.py captures in plain PyTorch (no cgtool) and reads the graph's private pool
from torch.cuda.memory_snapshot(). Against it: cgtool bench's pool bytes on real models of the corpus, and
cgtool capture's trees pool on a compiled step (within 5%; the compiled step with a cold and with a warm inductor
cache, each process given its own cache folder: a cold cache autotunes in the trees' warmup call, whose L2-sized
flush buffer stays in the pool as a free segment); a decoder's size sweep with shared-pool totals (8 sizes); a
plan for one histogram and budget, captured in plain PyTorch and compared with the prediction, both from the
sweep (the run-to-run error) and from the plain run's own per-size times (the planner's modelling error).
Tables go to $OUT/issue21-tables.md, the plan's plot to $OUT/issue21-plan.svg (docs/images/bench-plan.svg)."""

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
DECODERS = [DECODER, "tests/gpu/scripts/gpt2_decode_sizes.py"]  # the size plan's memory, checked on both
SIZES = "1:128"  # 1, 2, 4, ..., 128: 8 sizes
HISTOGRAM = {1: 30, 2: 12, 3: 20, 5: 10, 12: 15, 20: 10, 40: 8, 100: 5}


def truth(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> dict:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "memory_truth.py"), *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=dict(os.environ, **(env or {})))
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


@pytest.mark.parametrize("script", MODELS, ids=os.path.basename)
def test_pool_bytes_match_plain_pytorch(script, pool_rows, measured):
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


def test_compiled_step_pool_matches_plain_pytorch(measured):
    """The trees' pool of a torch.compile step, cgtool capture against a plain run of the step, each process
    with its own inductor cache folder: first cold (both autotune), then warm (both reuse their best configs)."""
    import shutil

    base = os.path.join(WORK, "issue21", "inductor")
    shutil.rmtree(base, ignore_errors=True)
    ours_cache, plain_cache = os.path.join(base, "cgtool"), os.path.join(base, "plain")
    rows, failures = [], []
    for cache in ("cold", "warm"):
        out = os.path.join(WORK, "issue21", f"compiled-{cache}")
        r = cgtool_run("capture", COMPILED, "--out", out, "--timeout", "300", timeout=400,
                       env={"TORCHINDUCTOR_CACHE_DIR": ours_cache})
        c = (read_json(os.path.join(out, "report.json")) or {}).get("compiled") or {}
        ours, used = c.get("pool_bytes"), c.get("pool_allocated_bytes")
        assert ours is not None, (r.stdout + r.stderr)[-3000:]
        real = truth("compiled", COMPILED, env={"TORCHINDUCTOR_CACHE_DIR": plain_cache})
        err = ours / real["pool_reserved"] - 1 if real["pool_reserved"] else float("inf")
        segs = ", ".join(f"{t / MiB:.0f}" + ("" if not a else f" ({a / MiB:.1f} live)") for t, a in real["segments"])
        rows.append([f"{os.path.basename(COMPILED)}, {cache} inductor cache", mib(ours), mib(used), mib(real["pool_reserved"]),
                     mib(real["pool_allocated"]), segs, mib(real["l2_cache_bytes"]), f"{err:+.1%}"])
        measured(f"{cache} cache: cgtool {ours} B, snapshot {real['pool_reserved']} B ({err:+.1%})", cgtool=ours, truth=real)
        if not (real["pool_reserved"] > 0 and abs(err) <= 0.05):
            failures.append(f"{cache}: {err:+.1%}")
    table("Compiled step (torch.compile, mode=\"reduce-overhead\"): cgtool capture's trees pool against plain PyTorch",
          ["run", "cgtool pool (reserved)", "cgtool in live tensors", "PyTorch snapshot", "snapshot in live tensors",
           "snapshot segments (MiB)", "L2 cache", "error"], rows)
    assert not failures, failures


@pytest.fixture(scope="module", params=DECODERS, ids=lambda p: os.path.basename(p).removesuffix(".py"))
def sweep(request) -> dict:
    """cgtool bench of a decoder over 8 sizes, with the plan for HISTOGRAM (no budget) and its plot."""
    script = request.param
    name = os.path.basename(script).removesuffix(".py")
    os.makedirs(os.path.join(WORK, "issue21"), exist_ok=True)
    hist = os.path.join(WORK, "issue21", "histogram.json")
    with open(hist, "w") as f:
        json.dump(HISTOGRAM, f)
    out = os.path.join(WORK, "issue21", f"bench-{name}.json")
    plot = os.path.join(WORK, "issue21", f"plan-unlimited-{name}.svg")
    r = cgtool_run("bench", script, "--sizes", SIZES, "--iters", "200", "--histogram", hist, "--out", out,
                   "--plot", plot, timeout=500)
    save_artifact("issue21-bench.txt", f"## {script}\n" + r.stdout + r.stderr)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert os.path.exists(plot) and "capture sizes for the expected batches" in r.stdout
    return {"report": read_json(out), "histogram_file": hist, "text": r.stdout, "script": script, "name": name}


def test_sizes_table_and_shared_pool_totals(sweep, measured):
    doc = sweep["report"]
    results = doc["results"]
    assert len(results) >= 8
    table(f"{sweep['script']} by batch size: cgtool bench --sizes 1:128",
          ["size", "pool reserved", "in live tensors", "capture peak", "capture", "instantiate", "eager wall",
           "replay wall", "speedup"],
          [[r["size"], mib(r["pool_bytes"]), mib(r["memory"]["pool_allocated"]), mib(r["memory"]["capture_peak_bytes"]),
            f"{r['capture_ms']:.1f} ms", f"{r['instantiate_ms']:.1f} ms", f"{r['eager']['wall']['median']:.0f} µs",
            f"{r['replay']['wall']['median']:.0f} µs", f"{r['speedup_wall']['point']:.2f}×"] for r in results])
    sp = doc["shared_pool"]
    table("All sizes in one pool (captured largest first, one capture stream) against separate pools",
          ["sizes", "shared pool", "in live tensors", "separate pools", "shared / separate", "capture (all)"],
          [[", ".join(map(str, sp["sizes"])), mib(sp["pool_reserved"]), mib(sp["pool_allocated"]),
            mib(sp["separate_reserved"]), f"{sp['pool_reserved'] / sp['separate_reserved']:.2f}",
            f"{sp['capture_ms']:.0f} ms"]])
    # the allocator model (bench/pool_model.py) from the sweep's own capture allocations: each size's own pool
    # exactly, and the shared pool this run measured (same process, same sizes)
    from cgtool.bench.result import BenchReport
    from cgtool.bench.size_plan import model_of_report

    model = model_of_report(BenchReport.from_json(doc))
    assert model.pool is not None, "the sweep recorded no capture allocations"
    own = [(r["size"], model.pool.shared_bytes([r["size"]]), r["pool_bytes"]) for r in results]
    predicted = model.memory(sp["sizes"])
    err = predicted / sp["pool_reserved"] - 1
    table(f"{sweep['name']}: the allocator model against the pools this sweep measured",
          ["what", "predicted", "measured", "error"],
          [*[[f"size {s} alone", mib(p), mib(m), f"{p / m - 1:+.1%}"] for s, p, m in own],
           ["all sizes in one pool, largest first", mib(predicted), mib(sp["pool_reserved"]), f"{err:+.1%}"]])
    measured("shared pool", shared=sp["pool_reserved"], separate=sp["separate_reserved"], predicted=predicted,
             own=own)
    # each size alone: equal, or one 2 MiB small segment apart (the simulation lays segments out in creation order;
    # cudaMalloc's addresses order equal-sized free blocks otherwise: gpt2_decode_sizes size 4, 8 MiB against 6 MiB)
    assert all(abs(p - m) <= 2 * MiB for _, p, m in own), own
    assert abs(err) <= 0.10
    assert all(r["pool_bytes"] > 0 for r in results)
    assert sp["pool_reserved"] <= sp["separate_reserved"]
    assert sp["pool_reserved"] >= max(r["pool_bytes"] for r in results) * 0.95
    for r in results:  # the floor is one replay cannot beat
        assert r["replay_floor_share"] <= 1.0 + 1e-9


def test_plan_against_plain_pytorch(sweep, measured):
    """Plan for HISTOGRAM under a budget that binds, capture the recommended sizes in plain PyTorch, and compare.

    Two errors, both stated in the tables: run to run (the plan from cgtool bench's sweep against the plain run:
    the sweep and the plain run are separate processes, timed at different moments on a possibly shared machine)
    and the planner's own (its arithmetic, interpolation between sizes and padding, fed with the plain run's own
    per-size times, against what the plain run measured per batch: ratios from one run)."""
    from cgtool.bench.plot import plot_plan
    from cgtool.bench.result import BenchReport
    from cgtool.bench.size_plan import CostModel, SizeCost, compare_plans, evaluate, model_of_report

    report = BenchReport.from_json(sweep["report"])
    model = model_of_report(report)
    hist = {int(b): float(w) for b, w in HISTOGRAM.items()}
    unlimited = compare_plans(model, hist, float("inf"))[0][1]
    budget = 0.7 * unlimited.memory_bytes
    plans = compare_plans(model, hist, budget)
    plan = plans[0][1]
    out = os.environ.get("OUT")
    if out and sweep["script"] == DECODER:
        plot_plan(report, plans, os.path.join(out, "issue21-plan.svg"))
    real = truth("sizes", sweep["script"], sweep["histogram_file"], ",".join(map(str, plan.sizes)),
                 ",".join(str(p.size) for p in model.points), timeout=500)
    same_run = CostModel(tuple(SizeCost(p.size, p.pool_bytes, p.capture_ms, t["eager_us"], t["replay_us"])
                               for p, t in zip(model.points, real["sweep"])), model.shared_extra, model.pool)
    modelled = evaluate(same_run, hist, plan.sizes)
    mem_err = plan.memory_bytes / real["pool_reserved"] - 1
    speed_err = plan.speedup / real["speedup"] - 1
    model_err = modelled.speedup / real["speedup"] - 1

    def err(a: float, b: float) -> str:
        return f"{a / b - 1:+.1%}"

    table(f"{sweep['name']}: plan for histogram {HISTOGRAM}, budget {mib(budget)} (70% of the unlimited plan's "
          f"memory; memory model: {model.memory_model}, sizes exact: {model.pool is not None and model.pool.exact(plan.sizes)})",
          ["set", "sizes", "memory", "capture", "mean step", "speedup"],
          [[label, ", ".join(map(str, p.sizes)), mib(p.memory_bytes), f"{p.capture_ms:.0f} ms", f"{p.mean_us:.0f} µs",
            f"{p.speedup:.2f}×"] for label, p in plans])
    table(f"{sweep['name']}: the recommended set captured in plain PyTorch (one pool, one stream, largest first) "
          f"against the prediction; plain segments (MiB): {', '.join(f'{x / MiB:g}' for x in real.get('segments', []))}",
          ["", "memory", "mean step", "eager mean", "speedup"],
          [["predicted from cgtool bench's sweep", mib(plan.memory_bytes), f"{plan.mean_us:.0f} µs",
            f"{plan.eager_mean_us:.0f} µs", f"{plan.speedup:.2f}×"],
           ["predicted from the plain run's per-size times", "-", f"{modelled.mean_us:.0f} µs",
            f"{modelled.eager_mean_us:.0f} µs", f"{modelled.speedup:.2f}×"],
           ["measured (plain PyTorch)", mib(real["pool_reserved"]), f"{real['mean_us']:.0f} µs",
            f"{real['eager_mean_us']:.0f} µs", f"{real['speedup']:.2f}×"],
           ["error, run to run (sweep vs plain run)", f"{mem_err:+.1%}", err(plan.mean_us, real["mean_us"]),
            err(plan.eager_mean_us, real["eager_mean_us"]), f"{speed_err:+.1%}"],
           ["error of the planner (same run)", "-", err(modelled.mean_us, real["mean_us"]),
            err(modelled.eager_mean_us, real["eager_mean_us"]), f"{model_err:+.1%}"]])
    table("Measured per batch (plain PyTorch, least of 7 loops of 10, items timed in turn)",
          ["batch", "weight", "captured size", "eager", "step (padded replay, or eager)", "planner (same run)"],
          [[r["batch"], r["weight"], r["captured"] or "- (eager)", f"{r['eager_us']:.0f} µs", f"{r['step_us']:.0f} µs",
            f"{_step(same_run, r['batch'], plan.sizes):.0f} µs"] for r in real["rows"]])
    table("Per sweep size: cgtool bench (median wall) against the plain run (least loop)",
          ["size", "eager, bench", "eager, plain", "replay, bench", "replay, plain"],
          [[p.size, f"{p.eager_us:.0f} µs", f"{t['eager_us']:.0f} µs", f"{p.replay_us:.0f} µs", f"{t['replay_us']:.0f} µs"]
           for p, t in zip(model.points, real["sweep"])])
    measured("plan", predicted=plan.to_json(), planner_same_run=modelled.to_json(),
             measured={k: v for k, v in real.items() if k not in ("rows", "sweep")},
             memory_error=mem_err, speedup_error=speed_err, planner_error=model_err)
    assert plan.memory_bytes <= budget and plan.sizes
    assert [t["size"] for t in real["sweep"]] == [p.size for p in model.points]
    # memory: the caching allocator replayed over the sweep's own capture allocations (bench/pool_model.py), sizes
    # between measured ones interpolated: within 10% (issue 36; the one fitted fraction it replaced saw -15% and
    # +40%); speed: the planner's arithmetic on one run's own times. The run-to-run speedup error is stated, not
    # bounded (it measures the machine's load).
    assert model.memory_model == "allocator"
    assert abs(mem_err) <= 0.10
    assert abs(model_err) <= 0.3
    assert real["speedup"] > 1 and plan.speedup > 1


def _step(model, batch: int, sizes) -> float:
    from cgtool.bench.size_plan import step_us

    return step_us(model, batch, sorted(sizes))
