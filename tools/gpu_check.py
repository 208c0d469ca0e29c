"""All GPU checks of cgtool in one run; a table at the end. Run through tools/gpu_check.sh.

Sections: GPU tests · capture of every sample (vs the driver's DOT) · performance bars · failed
capture · lint of samples/ (hazards by category and line) · bench accuracy, repeatability, cost,
sweep, compare · partial capture (piecewise, module map) · distributed (tools/gpu_check_dist.py;
`bash tools/gpu_check.sh distributed`) · compiled (tools/gpu_check_compiled.py: torch.compile's CUDA graphs) ·
faults (the worker killed in each GPU phase). Artifacts go to $OUT (or ./gpu-check-out).
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


def _piece_row(name: str, d: dict | None, whole: str) -> None:
    p = (d or {}).get("piecewise") or {}
    if p.get("status") == "not-possible":  # torch refuses the step in pieces: a pass when cgtool says so clearly
        note = p.get("note") or ""
        row(f"partial piecewise {name}", note.startswith("piecewise not possible:"), f"{whole}; {note[:300]}")
        return
    if p.get("status") != "measured":
        err = (p.get("error") or {}).get("message") or (d or {}).get("errors")
        row(f"partial piecewise {name}", False, f"status {p.get('status')}; {str(err)[:300]}")
        return
    t, rp = p.get("timings") or {}, p.get("replay") or {}
    share = p.get("kernel_share")
    splits = ", ".join(f"{(s.get('frame') or {}).get('line')}: {s['reason'][:50]}" for s in p.get("splits", []))
    ok = bool(p.get("pieces")) and rp.get("status") == "match" and (t.get("speedup") or 0) > 0
    row(f"partial piecewise {name}", ok,
        f"{whole}; {len(p['pieces'])} graph(s)/step, {share if share is None else format(share, '.0%')} of kernels in "
        f"graphs ({p['kernels_in_graphs']} in, {p['kernels_outside']} out); replay {rp.get('status')} (max abs "
        f"{rp.get('max_abs', 0):.2g}); speedup vs eager {t.get('speedup', 0):.2f}x (eager {t.get('eager_us', 0):.0f} us, "
        f"pieced {t.get('replay_us', 0):.0f} us); split at [{splits}]; skips {p.get('skips')}; {p.get('note', '')[:200]}")


# A representative subset (the first H100 run of every breaking hazard sample ran past 300 s): a host read in a
# training step, a data-dependent shape, the AMP scaler's step, a stream mutation torch refuses, samples/partial.
PARTIAL_SAMPLES = ["samples/hazards/item_sync.py", "samples/hazards/bool_mask.py", "samples/hazards/gradscaler_step.py",
                   "samples/hazards/default_stream.py"]


def _modules_row(script: str, depth: str, log: list[str]) -> None:
    out = os.path.join(WORK, "capture", "modules_" + os.path.basename(script)[:-3])
    try:
        r = cgtool("capture", script, "--modules", depth, "--out", out, "--timeout", "60", timeout=75)
    except subprocess.TimeoutExpired:
        row(f"partial modules {script} --modules {depth}", False, "no result in 75 s")
        return
    log.append(f"== capture {script} --modules {depth} exit {r.returncode}\n{r.stdout[-5000:]}\n{r.stderr[-2000:]}")
    try:
        m = json.load(open(os.path.join(out, "report.json")))["modules"] or {}
    except (OSError, ValueError, KeyError):
        row(f"partial modules {script}", False, f"no report; exit {r.returncode}: {r.stderr[-300:]}")
        return
    t, rp = m.get("timings") or {}, m.get("replay") or {}
    mods = "; ".join(f"{e['path']} {e['status']}" + (f" ({e['reason'][:60]})" if e["reason"] else "")
                     for e in m.get("modules", [])[:12])
    ok = m.get("status") == "measured" and bool(m.get("graphed")) and rp.get("status") == "match"
    row(f"partial modules {script} --modules {depth}", ok,
        f"graphed {m.get('graphed')}; replay {rp.get('status')} (max abs {rp.get('max_abs', 0):.2g}); speedup "
        f"{t.get('speedup', 0):.2f}x; {mods}; {m.get('note', '')[:100]}")


def section_partial() -> None:
    """Partial capture (docs/partial.md) in about 200 s of GPU time: the module map first (so its rows are seen),
    the probe of the torch APIs alongside it (correctness only: it runs beside the module rows), then piecewise on
    a representative subset with a short timing budget, each run under its own timeout, rows printed as they end."""
    t0 = time.perf_counter()
    probe = subprocess.Popen([sys.executable, "tools/partial_probe.py"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, cwd=ROOT)
    log: list[str] = []
    for script, depth in (("samples/partial/module_breaks.py", "1"), ("samples/partial/llama_loss_log.py", "2")):
        _modules_row(script, depth, log)
    try:
        text, _ = probe.communicate(timeout=max(10.0, 90 - (time.perf_counter() - t0)))
    except subprocess.TimeoutExpired:
        probe.kill()
        text = (probe.communicate()[0] or "") + "\n(killed: past its time)"
    with open(os.path.join(OUT, "partial_probe.txt"), "w") as fh:
        fh.write(text)
    for line in text.splitlines():
        if line.startswith("PROBE "):
            row("partial probe " + line[6:].split(":", 1)[0], "FAILED" not in line, line.split(":", 1)[1].strip()[:400])
    paths = PARTIAL_SAMPLES + [os.path.relpath(p, ROOT) for p in sorted(glob.glob(os.path.join(ROOT, "samples", "partial", "*.py")))]
    for name in paths:
        try:
            r = cgtool("bench", name, "--piecewise", "--budget-s", "1.5", "--json", "--timeout", "45", timeout=55)
        except subprocess.TimeoutExpired:
            row(f"partial piecewise {name}", False, "no result in 55 s")
            continue
        log.append(f"== {name} exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        try:
            d = json.loads(r.stdout)
        except json.JSONDecodeError:
            row(f"partial piecewise {name}", False, f"exit {r.returncode}: {r.stderr[-300:]}")
            continue
        rules = ",".join(sorted({rule for _, rule in markers(os.path.join(ROOT, name))}))
        _piece_row(name, d, f"whole step breaks ({rules})")
    out = os.path.join(WORK, "capture", "partial_item_sync")
    try:
        r = cgtool("capture", "samples/hazards/item_sync.py", "--piecewise", "--out", out, "--timeout", "60", timeout=90)
        log.append(f"== capture item_sync --piecewise exit {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-2000:]}")
        dots = sorted(f for f in os.listdir(out) if f.startswith("graph-piece-")) if os.path.isdir(out) else []
        verdict = [ln for ln in r.stdout.splitlines() if ln.startswith("whole step")]
        row("partial capture --piecewise verdict + DOT per piece (item_sync)", bool(verdict) and bool(dots),
            f"exit {r.returncode}; {' '.join(verdict)[:300]}; files {dots}")
    except subprocess.TimeoutExpired:
        row("partial capture --piecewise verdict + DOT per piece (item_sync)", False, "no result in 90 s")
    with open(os.path.join(OUT, "partial.txt"), "w") as fh:
        fh.write("\n".join(log))
    row("partial section wall time < 200 s (info)", None, f"{time.perf_counter() - t0:.0f} s")


FAULT_STOPS = {  # GPU phase -> where tests/data/faults/stop_in_phase.py waits (3 warmup calls come first)
    "capture": "capturing",  # the step's call while the stream captures (call 4)
    "replay-check": "call:5",  # the replay check's first eager call on fresh inputs (it makes two: eager vs eager)
    "timing": "call:7",  # the first eager call of the quick timing (after the replay check's two)
}


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _fault_run(phase: str, sig: int) -> tuple[str, bool, str]:
    """`cgtool capture` of the fault script, the worker signalled once it waits in `phase`: exit 4, a report
    naming the signal and the phase, nothing left running (the worker and the `sleep` it forked)."""
    import shutil
    import signal as signals
    import tempfile

    name = signals.Signals(sig).name
    folder = tempfile.mkdtemp(prefix=f"fault-{phase}-{name}-", dir=WORK)
    script = shutil.copy(os.path.join(ROOT, "tests", "data", "faults", "stop_in_phase.py"), folder)
    with open(os.path.join(folder, "fault_at.txt"), "w") as fh:
        fh.write(FAULT_STOPS[phase] + "\n")
    out = os.path.join(folder, "out")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cgtool", "capture", script, "--out", out], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ, NO_COLOR="1"))
    pids_path = os.path.join(folder, "pids")
    while not os.path.exists(pids_path) and proc.poll() is None and time.perf_counter() - t0 < 120:
        time.sleep(0.05)
    if not os.path.exists(pids_path):
        proc.kill()
        stdout, stderr = proc.communicate()
        return f"fault: {name} in {phase}", False, f"never stopped there; exit {proc.returncode}: {stdout[-200:]} {stderr[-200:]}"
    worker, child = (int(p) for p in open(pids_path).read().split())
    os.kill(worker, sig)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        return f"fault: {name} in {phase}", False, "cgtool did not return within 120 s of the signal"
    try:
        report = json.load(open(os.path.join(out, "report.json")))
        reported = report["errors"][0]["phase"] if report["errors"] else "-"
        status = report["status"]
    except (OSError, ValueError, KeyError, IndexError):
        reported, status = "-", "no report.json"
    leftovers = [p for p in os.listdir(out) if p.startswith(".")] if os.path.isdir(out) else []
    ok = (proc.returncode == 4 and status == "worker-failed" and reported == phase and f"killed by {name}" in stdout
          and not leftovers and _gone(worker) and _gone(child) and "Traceback" not in stdout + stderr)
    return (f"fault: {name} in {phase}", ok, f"exit {proc.returncode}, {status}, phase reported {reported}, "
            f"{'no orphan' if _gone(child) else 'ORPHANED sleep ' + str(child)}, {time.perf_counter() - t0:.1f} s")


def section_faults() -> None:
    """The worker killed by SIGKILL, SIGTERM and SIGINT in each GPU phase (capture, replay check, timing): nine
    runs at once (a tiny step each), about 20-40 s. CPU phases (load, setup, warmup): tests/test_faults.py."""
    import signal as signals
    from concurrent.futures import ThreadPoolExecutor

    cases = [(phase, sig) for phase in FAULT_STOPS for sig in (signals.SIGKILL, signals.SIGTERM, signals.SIGINT)]
    with ThreadPoolExecutor(len(cases)) as pool:
        for check, ok, detail in pool.map(lambda c: _fault_run(*c), cases):
            row(check, ok, detail)


def main() -> int:
    sections = sys.argv[1:] or ["tests", "capture", "failed", "lint", "overhead", "bench", "dot", "faults", "realworld",
                                "partial", "distributed", "compiled"]
    import torch

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    funcs = {"tests": section_tests, "capture": section_capture, "failed": section_failed_capture,
             "lint": section_lint, "overhead": section_overhead, "bench": section_bench, "dot": section_dot,
             "realworld": lambda: section_realworld(row, cgtool, OUT, WORK), "partial": section_partial,
             "distributed": lambda: __import__("tools.gpu_check_dist").gpu_check_dist.section(ROOT, OUT, WORK, row, markers),
             "compiled": lambda: __import__("tools.gpu_check_compiled").gpu_check_compiled.section(row, cgtool, OUT, WORK),
             "faults": section_faults}
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
