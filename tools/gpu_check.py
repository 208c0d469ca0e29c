"""All GPU checks of cgtool in one run; a table at the end. Run through tools/gpu_check.sh.

Sections: tests (pytest -m gpu) · capture of every sample (vs the driver's DOT) · overhead (performance bars) ·
failed capture · lint of samples/ (hazards by category and line) · bench accuracy, repeatability, cost, sweep,
compare · dot · realworld (tools/gpu_realworld.py: library models) · partial, partial-hazards, partial-realworld
(tools/gpu_check_partial.py: piecewise capture, module map) · distributed (tools/gpu_check_dist.py, on 2 GPUs)
· compiled (tools/gpu_check_compiled.py: torch.compile's CUDA graphs) · faults (tools/gpu_check_faults.py: the
worker killed in each GPU phase). One device call is limited to 10 minutes: name a few sections per call.
Artifacts go to $OUT (or ./gpu-check-out).
One section: `python3 tools/gpu_check.py faults`.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.expect_markers import markers  # noqa: E402  (one `# expect:` parser for tests and this script)
from tools import gpu_check_faults, gpu_check_partial  # noqa: E402
from tools.gpu_realworld import section_realworld  # noqa: E402

OUT = os.environ.get("OUT") or os.path.join(ROOT, "gpu-check-out")  # what comes back (8 files at most)
WORK = os.path.join("/tmp", "cgtool-gpu-check")  # everything else
os.makedirs(OUT, exist_ok=True)
os.makedirs(WORK, exist_ok=True)
ROWS: list[tuple[str, str, str]] = []  # (check, PASS/FAIL/INFO, detail)
SAMPLES = ["mlp_inference", "transformer_train", "multistream", "deep_1000"]


def row(check: str, ok: bool | None, detail: str) -> None:
    status = "INFO" if ok is None else ("PASS" if ok else "FAIL")
    ROWS.append((check, status, detail))
    print(f"[{status}] {check}: {detail}", flush=True)


def cgtool(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cgtool", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=dict(os.environ, NO_COLOR="1", COLUMNS="160"))


def section_tests() -> None:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests", "-p", "no:cacheprovider"],
                       capture_output=True, text=True, cwd=ROOT, timeout=900)
    tail = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
    with open(os.path.join(OUT, "pytest.txt"), "w") as fh:
        fh.write(r.stdout + r.stderr)
    row("pytest -m gpu", r.returncode == 0, f"{tail} ({time.perf_counter() - t0:.0f} s)")
    if r.returncode:
        print(r.stdout[-6000:])


def section_capture() -> None:
    from cgtool.graph.driver_dot import read_driver_dot
    from cgtool.model.report import Report

    for name in SAMPLES:
        out = os.path.join(WORK, "capture", name)
        t0 = time.perf_counter()
        r = cgtool("capture", f"samples/{name}.py", "--out", out)
        wall = time.perf_counter() - t0
        if name == "mlp_inference":
            with open(os.path.join(OUT, "capture_mlp.txt"), "w") as fh:
                fh.write(r.stdout + r.stderr)
        try:
            data = json.load(open(os.path.join(out, "report.json")))
        except OSError:
            row(f"capture {name}", False, f"no report; exit {r.returncode}: {r.stderr[-300:]}")
            continue
        g = data["graph"] or {"nodes": [], "edges": []}
        drv = read_driver_dot(open(os.path.join(out, "graph.driver.dot")).read()) if data["graph"] else None
        ours_k = collections.Counter(n.get("mangled") for n in g["nodes"] if n["kind"] == "kernel")
        drv_k = collections.Counter(n.mangled for n in drv.nodes if n.kind == "kernel") if drv else None
        same = drv is not None and len(drv.nodes) == len(g["nodes"]) and len(drv.edges) == len(g["edges"]) and ours_k == drv_k
        t = data["timings"] or {}
        rp = data["replay"] or {}
        ok = r.returncode == 0 and same and rp.get("status") == "match" and t.get("speedup", 0) > 1
        verdict = [ln for ln in r.stdout.splitlines() if "faster" in ln or "slower" in ln]
        row(f"capture {name}", ok,
            f"exit {r.returncode}; {len(g['nodes'])} nodes/{len(g['edges'])} edges (driver {len(drv.nodes) if drv else '-'}/"
            f"{len(drv.edges) if drv else '-'}), kernel names {'= driver' if ours_k == drv_k else '≠ driver'}; replay "
            f"{rp.get('status')} (max abs {rp.get('max_abs', 0):.2g}, {len(rp.get('tensors', []))} tensors); "
            f"{verdict[-1] if verdict else 'no verdict'}; wall {wall:.1f} s")
        if name == "deep_1000" and data["graph"]:
            s = data["settings"]
            rep = Report.from_json(data)
            t1 = time.perf_counter()
            json.dumps(rep.to_json(), indent=1)
            json_ms = (time.perf_counter() - t1) * 1e3
            total = s["read_graph_ms"] + s["driver_dot_ms"] + s["write_dots_ms"] + json_ms
            row("perf: deep_1000 read graph + both DOT + JSON < 1 s", total < 1000,
                f"{total:.0f} ms = read {s['read_graph_ms']:.0f} + driver DOT {s['driver_dot_ms']:.0f} + "
                f"graph.dot {s['write_dots_ms']:.0f} + JSON {json_ms:.0f} ms ({len(g['nodes'])} nodes); "
                f"capture itself {t.get('capture_ms', 0):.0f} ms")


def section_failed_capture() -> None:
    path = os.path.join(ROOT, "samples", "hazards", "item_sync.py")
    line = markers(path)[0][0]
    out = os.path.join(WORK, "capture", "item_sync")
    r = cgtool("capture", path, "--out", out)
    with open(os.path.join(OUT, "capture_item_sync.txt"), "w") as fh:
        fh.write(r.stdout + r.stderr)
    data = json.load(open(os.path.join(out, "report.json")))
    named = [f for f in data["findings"] if f["line"] == line]
    err = data["errors"][0] if data["errors"] else {}
    row("failed capture (.item()) leaves cgtool standing", r.returncode == 1 and bool(named),
        f"exit {r.returncode}, status {data['status']}, finding {named[0]['rule'] if named else None} at line "
        f"{named[0]['line'] if named else None} (expected {line}); raw error {err.get('cuda_error')}: "
        f"{err.get('message', '')[:80]}")


def section_lint() -> None:
    t0 = time.perf_counter()
    paths = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "samples", "*"))
                   if os.path.basename(p) != "compiled")
    r = cgtool("lint", *paths, "--format", "json", "-j", "4", timeout=900)  # compiled: the "compiled" section
    wall = time.perf_counter() - t0
    try:
        data = json.loads(r.stdout)
    except json.JSONDecodeError:
        row("lint samples/", False, f"exit {r.returncode}: {r.stderr[-400:]}")
        return
    with open(os.path.join(OUT, "lint.json"), "w") as fh:
        fh.write(r.stdout)
    all_ok = True
    lines = []
    for s in data["scripts"]:
        path = s["path"]
        if f"{os.sep}distributed{os.sep}" in os.path.abspath(path):
            continue  # they need --nproc-per-node: the "distributed" section runs them
        if f"{os.sep}compiled{os.sep}" in os.path.abspath(path):
            continue  # torch.compile samples: the "compiled" section runs them
        exp = markers(os.path.join(ROOT, path) if not os.path.isabs(path) else path)
        found = {(f["line"], f["rule"]): f for f in s["findings"]}
        errs = [f for f in s["findings"] if f["severity"] == "error"]
        base = os.path.basename(path)
        if exp:
            hit = all((ln, rule) in found for ln, rule in exp)
            cats = sorted({found[(ln, rule)]["category"] for ln, rule in exp if (ln, rule) in found})
            extra = [f"{f['rule']}@{f['line']}" for f in errs if (f["line"], f["rule"]) not in exp]
            ok = hit
            detail = (f"expect {', '.join(f'{r}@{ln}' for ln, r in exp)} → "
                      f"{'found' if hit else 'MISSING'} [{', '.join(cats)}]" + (f"; also {', '.join(extra)}" if extra else ""))
        else:
            ok = not errs and not s["errors"]
            detail = "clean: " + ("no error finding" if ok else f"{[f['rule'] + '@' + str(f['line']) for f in errs]} {s['errors']}")
        all_ok &= ok
        lines.append((base, ok, detail))
    for base, ok, detail in lines:
        row(f"lint {base}", ok, detail)
    row("lint samples/ overall", all_ok and r.returncode == 1,
        f"exit {r.returncode} (1 expected: hazards present), {len(data['scripts'])} scripts, device "
        f"{data.get('device')}, {wall:.0f} s with -j 4")


def bench_json(*args: str) -> dict | None:
    r = cgtool("bench", *args, "--json")
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        print(r.stdout[-2000:], r.stderr[-2000:])
        return None


def section_bench() -> None:
    from tools.ref_bench import reference, same_process

    runs = []
    for i in range(5):
        t0 = time.perf_counter()
        d = bench_json("samples/mlp_inference.py")
        runs.append((d, time.perf_counter() - t0))
    res = [d["results"][0] for d, _ in runs if d and d["results"]]
    if len(res) < 5:
        row("bench mlp x5", False, "bench failed")
        return
    row("bench 5 consecutive runs (info)", None, "; ".join(
        f"{r['speedup_wall']['point']:.3f} ({r['speedup_wall']['low']:.2f}-{r['speedup_wall']['high']:.2f}, "
        f"{r['stopped_by']}, slowed {(r.get('cpu_load') or {}).get('slowed_fraction', 0):.0%})" for r in res))
    res = res[:3]
    sp = [r["speedup_wall"]["point"] for r in res]
    spg = [r["speedup_gpu"]["point"] for r in res]
    load = [r.get("cpu_load") or {} for r in res]
    cis = [f"{r['speedup_wall']['low']:.2f}-{r['speedup_wall']['high']:.2f}" for r in res]
    row("bench repeatability (3 runs, ±3%)", all(abs(s / (sum(sp) / 3) - 1) <= 0.03 for s in sp),
        f"wall speedups {', '.join(f'{s:.3f}' for s in sp)} (95% CIs {', '.join(cis)}; stopped by "
        f"{', '.join(r['stopped_by'] for r in res)}); gpu {', '.join(f'{s:.3f}' for s in spg)}; "
        f"CPU slowed in {', '.join(format(x.get('slowed_fraction', 0), '.0%') for x in load)} of blocks; counting "
        f"every block: {', '.join(format(x.get('all_speedup', 0), '.3f') for x in load)}")
    first, wall = runs[0]
    r0 = first["results"][0]
    row("bench cost (CI ±1% in < 10 s)", r0["stopped_by"] == "converged" and wall < 10 + 8,
        f"stopped by {r0['stopped_by']} after {r0['elapsed_s']:.1f} s measuring ({wall:.1f} s wall incl. start-up, "
        f"capture); eager {r0['eager']['wall']['median']:.0f} µs, replay {r0['replay']['wall']['median']:.0f} µs")
    mlp = os.path.join(ROOT, "samples", "mlp_inference.py")
    ref = reference(mlp)
    ours = sum(spg) / 3
    dev = ours / ref["loop_speedup"] - 1
    row("bench CLI vs own event loop, separate processes (info)", None,
        f"cgtool {ours:.3f} vs {ref['loop_speedup']:.3f} ({dev:+.1%}); "
        f"{json.dumps({k: round(v, 2) for k, v in ref.items() if isinstance(v, float)})}")
    same = same_process(mlp)
    print(json.dumps(same["turns"]))
    dev = same["every_block"] / same["loop"] - 1
    row("bench accuracy vs own event loop, 15 alternating turns in one process, every block (±5%)", abs(dev) <= 0.05,
        f"cgtool gpu speedup {same['every_block']:.3f} vs loop {same['loop']:.3f} ({dev:+.1%})")
    dev = same["quiet_headline"] / same["quiet_loop"] - 1
    row("bench headline vs own event loop in turns with the CPU at full speed (±5%)",
        abs(dev) <= 0.05 if same["quiet_turns"] else None,
        f"{same['quiet_turns']} of 15 turns had no slowed block: cgtool {same['quiet_headline']:.3f} vs loop "
        f"{same['quiet_loop']:.3f} ({dev:+.1%})")

    t0 = time.perf_counter()
    plot = os.path.join(OUT, "sweep.svg")
    sweep = cgtool("bench", "samples/mlp_inference.py", "--sizes", "1,2,4,8,16", "--budget-s", "4", "--plot", plot,
                   "--out", os.path.join(OUT, "sweep.json"))
    print(sweep.stdout[-3000:])
    row("bench sweep 5 sizes + plot", sweep.returncode == 0 and os.path.exists(plot),
        f"exit {sweep.returncode}, {time.perf_counter() - t0:.0f} s; " +
        " | ".join(ln.strip() for ln in sweep.stdout.splitlines() if re.match(r"\s*(size|\d+)\s", ln))[:300])
    base = os.path.join(WORK, "baseline.json")
    with open(base, "w") as fh:
        json.dump(first, fh)
    ok_run = cgtool("bench", "samples/mlp_inference.py", "--compare", base, "--fail-if-slower", "10", "--budget-s", "5")
    doctored = json.loads(json.dumps(first))
    for clock in ("gpu", "wall"):
        st = doctored["results"][0]["replay"][clock]
        for k in ("median", "mean", "min", "max", "q1", "q3", "ci_low", "ci_high"):
            if isinstance(st.get(k), (int, float)):
                st[k] = st[k] * 0.5
    bad = os.path.join(WORK, "baseline_doctored.json")
    with open(bad, "w") as fh:
        json.dump(doctored, fh)
    fail_run = cgtool("bench", "samples/mlp_inference.py", "--compare", bad, "--fail-if-slower", "10", "--budget-s", "5")
    row("bench --compare passes against its own baseline", ok_run.returncode == 0,
        f"exit {ok_run.returncode}: " + " ".join(ln.strip() for ln in ok_run.stdout.splitlines()[-2:]))
    row("bench --compare fails against a 2x-faster doctored baseline", fail_run.returncode == 1,
        f"exit {fail_run.returncode}: " + " ".join(ln.strip() for ln in fail_run.stdout.splitlines()[-2:]))


def section_dot() -> None:
    path = os.path.join(WORK, "capture", "deep_1000", "graph.driver.dot")
    if not os.path.exists(path):
        return
    t0 = time.perf_counter()
    r = cgtool("dot", path)
    row("dot summary of the real deep_1000 driver DOT", r.returncode == 0,
        f"exit {r.returncode}, {time.perf_counter() - t0:.2f} s wall incl. start-up; " +
        " ".join(ln.strip() for ln in r.stdout.splitlines() if "×" in ln)[:200])
    a = os.path.join(WORK, "capture", "mlp_inference", "report.json")
    b = os.path.join(WORK, "capture", "deep_1000", "report.json")
    r = cgtool("dot", a, "--diff", b, "--fail-on-growth", "10")
    row("dot --diff --fail-on-growth (mlp → deep_1000 grows)", r.returncode == 1, f"exit {r.returncode}")


def section_overhead() -> None:
    r = subprocess.run([sys.executable, "tools/trace_overhead_gpu.py"], capture_output=True, text=True, cwd=ROOT,
                       timeout=600)
    line = (r.stdout.strip().splitlines() or [r.stderr[-500:]])[-1]
    try:
        d = eval(line, {"__builtins__": {}}, {"inf": float("inf"), "nan": float("nan")})  # the printed dict
    except Exception:
        row("analysis overhead (deep_1000)", False, line)
        return
    ok = d["added_x"] < 3.0 and d["tracer_start_s"] + d["checks_s"] < 2.0
    row("analysis overhead < 3x eager per traced iteration + < 2 s fixed (deep_1000)", ok,
        f"eager {d['eager_ms']:.1f} ms, traced {d['traced_ms']:.1f} ms: +{d['added_x']:.2f}x "
        f"({d['us_per_op_added']:.0f} us/op over {d['ops_per_iter']:.0f} ops); fixed: tracer start "
        f"{d['tracer_start_s']:.2f} s + checks {d['checks_s']:.2f} s; tracer_error {d['tracer_error']}")


def main() -> int:
    sections = sys.argv[1:] or ["tests", "capture", "failed", "lint", "overhead", "bench", "dot", "faults", "realworld",
                                "partial", "partial-hazards", "partial-realworld", "distributed", "compiled"]
    import torch

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    funcs = {"tests": section_tests, "capture": section_capture, "failed": section_failed_capture,
             "lint": section_lint, "overhead": section_overhead, "bench": section_bench, "dot": section_dot,
             "realworld": lambda: section_realworld(row, cgtool, OUT, WORK),
             "partial": lambda: gpu_check_partial.section_partial(row, cgtool, OUT, WORK),
             "partial-hazards": lambda: gpu_check_partial.section_partial_hazards(row, cgtool, OUT, WORK),
             "partial-realworld": lambda: gpu_check_partial.section_partial_realworld(row, cgtool, OUT, WORK),
             "distributed": lambda: __import__("tools.gpu_check_dist").gpu_check_dist.section(ROOT, OUT, WORK, row, markers),
             "compiled": lambda: __import__("tools.gpu_check_compiled").gpu_check_compiled.section(row, cgtool, OUT, WORK),
             "faults": lambda: gpu_check_faults.section(row, WORK)}
    unknown = [s for s in sections if s not in funcs]
    if unknown:
        print(f"unknown section(s) {unknown}; sections: {' '.join(funcs)}", file=sys.stderr)
        return 2
    for s in sections:
        t0 = time.perf_counter()
        try:
            funcs[s]()
        except Exception as exc:  # one broken section must not hide the others
            import traceback

            traceback.print_exc()
            row(f"section {s}", False, f"{type(exc).__name__}: {exc}")
        print(f"-- section {s}: {time.perf_counter() - t0:.0f} s", flush=True)
    width = max(len(c) for c, _, _ in ROWS)
    print("\n" + "=" * 100)
    for check, status, detail in ROWS:
        print(f"{status:4}  {check:<{width}}  {detail}")
    fails = sum(1 for _, s, _ in ROWS if s == "FAIL")
    print(f"{len(ROWS)} checks, {fails} failed")
    with open(os.path.join(OUT, "table.txt"), "w") as fh:
        for check, status, detail in ROWS:
            fh.write(f"{status:4}  {check:<{width}}  {detail}\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
