"""gpu_check sections of partial capture (docs/partial.md).

`partial` (about 4 min): `capture --modules` on samples/partial/module_breaks.py (depth 1) and the tiny Llama
training step (depth 2: the decoder layers below the ModuleList), with tools/partial_probe.py (the torch APIs
this relies on; correctness only) beside them; then `bench --piecewise` on every script of samples/partial/;
then `capture --piecewise` on item_sync (verdict, DOT per piece).

`partial-hazards` (about 7 min): `capture --piecewise` on every hazard sample (samples/hazards/, the clean_*
ones left out): the whole-step capture first (its status is in the row), then the pieced step — pieces, share of
kernels in graphs, replay against eager, speedup with bench's method (capture's short run).

`partial-realworld`: the same on the real-library hazards of tests/realworld/hazards/.

Every run has its own timeout; rows are printed as runs end; a section stops starting runs when its time is
nearly up (one device call is limited to 10 minutes) and says which it left out.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.expect_markers import markers  # noqa: E402

# stop starting runs after this many seconds (a device call ends at 600 s); CGTOOL_SECTION_BUDGET_S sets it when
# sections share a call
SECTION_BUDGET_S = float(os.environ.get("CGTOOL_SECTION_BUDGET_S", "500"))


def piece_row(row: Callable, check: str, d: dict | None, whole: str, judge: bool = True, verdict: str = "") -> None:
    """PASS: pieces measured with replay matching eager, or a clear `not-possible`. Not judged (INFO) for a step
    whose whole-step capture worked (piecewise is shown, not needed: its replay differs where the whole step's
    did, for the same reason), nor for a pieced step whose replay differs when the verdict calls it unsafe (the
    hazard shows in the pieces too: custom_generator.py's generator is not advanced by graph replay)."""
    p = (d or {}).get("piecewise") or {}
    if (p.get("replay") or {}).get("status") == "mismatch" and "unsafe" in verdict:
        judge = False
        whole += "; the pieced step's replay differs from eager and the verdict says unsafe"
    emit = row if judge else (lambda check, ok, detail: row(check, None, detail))
    if p.get("status") == "not-possible":  # torch refuses the step in pieces: a pass when cgtool says so clearly
        note = p.get("note") or ""
        emit(check, note.startswith("piecewise not possible:"), f"{whole}; {note[:300]}")
        return
    if p.get("status") != "measured":
        err = (p.get("error") or {}).get("message") or (d or {}).get("errors")
        emit(check, False, f"{whole}; status {p.get('status')}; {str(err)[:300]}; {p.get('note', '')[:200]}")
        return
    t, rp = p.get("timings") or {}, p.get("replay") or {}
    share = p.get("kernel_share")
    splits = ", ".join(f"{(s.get('frame') or {}).get('line')}: {s['reason'][:50]}" for s in p.get("splits", []))
    ok = bool(p.get("pieces")) and rp.get("status") == "match" and (t.get("speedup") or 0) > 0
    emit(check, ok,
        f"{whole}; {len(p['pieces'])} graph(s)/step, {share if share is None else format(share, '.0%')} of kernels in "
        f"graphs ({p['kernels_in_graphs']} in, {p['kernels_outside']} out); replay {rp.get('status')} (max abs "
        f"{rp.get('max_abs', 0):.2g}); speedup vs eager {t.get('speedup', 0):.2f}x (eager {t.get('eager_us', 0):.0f} us, "
        f"pieced {t.get('replay_us', 0):.0f} us); split at [{splits}]; skips {p.get('skips')}; {p.get('note', '')[:240]}")


def modules_row(row: Callable, cgtool: Callable, work: str, script: str, depth: str, log: list[str]) -> None:
    check = f"partial modules {script} --modules {depth}"
    out = os.path.join(work, "capture", "modules_" + os.path.basename(script)[:-3])
    try:
        r = cgtool("capture", script, "--modules", depth, "--out", out, "--timeout", "90", timeout=200)
    except subprocess.TimeoutExpired:
        row(check, False, "no result in 200 s")
        return
    log.append(f"== capture {script} --modules {depth} exit {r.returncode}\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}")
    try:
        m = json.load(open(os.path.join(out, "report.json")))["modules"] or {}
    except (OSError, ValueError, KeyError):
        row(check, False, f"no report; exit {r.returncode}: {r.stderr[-300:]}")
        return
    log.append("   module findings: " + json.dumps([(e["path"], [(f["rule"], f["line"], f.get("library"), f["message"][:120])
                                                             for f in e.get("findings", [])]) for e in m.get("modules", [])]))
    t, rp = m.get("timings") or {}, m.get("replay") or {}
    mods = "; ".join(f"{e['path']} {e['status']}" + (f" ({e['reason'][:70]})" if e["reason"] else "")
                     for e in m.get("modules", [])[:16])
    ok = m.get("status") == "measured" and bool(m.get("graphed")) and rp.get("status") == "match"
    row(check, ok, f"graphed {m.get('graphed')}; replay {rp.get('status')} (max abs {rp.get('max_abs', 0):.2g}); "
                   f"speedup {t.get('speedup', 0):.2f}x (eager {t.get('eager_us', 0):.0f} us, graphed "
                   f"{t.get('replay_us', 0):.0f} us); {mods}; {m.get('note', '')[:100]}")


def capture_piecewise_row(row: Callable, cgtool: Callable, work: str, path: str, log: list[str]) -> None:
    """`cgtool capture PATH --piecewise`: the whole step's status, then the pieced step's row."""
    rel = os.path.relpath(path, ROOT)
    check = f"partial piecewise {rel}"
    out = os.path.join(work, "capture", "piecewise_" + os.path.basename(path)[:-3])
    t0 = time.perf_counter()
    try:
        r = cgtool("capture", rel, "--piecewise", "--out", out, "--timeout", "120", timeout=280)
    except subprocess.TimeoutExpired:
        row(check, False, "no result in 280 s")
        return
    log.append(f"== capture {rel} --piecewise exit {r.returncode}\n{r.stdout[-5000:]}\n{r.stderr[-4000:]}")
    try:
        d = json.load(open(os.path.join(out, "report.json")))
    except (OSError, ValueError):
        row(check, False, f"no report; exit {r.returncode}: {r.stderr[-300:]}")
        return
    rules = ",".join(sorted({rule for _, rule in markers(path)}))
    err = (d.get("errors") or [{}])[0]
    failed_at = next((f"{f['rule']}@{f['line']}" for f in d.get("findings", []) if f.get("evidence") == "confirmed"), "")
    whole = (f"whole step {d.get('status')}" + (f" ({err.get('cuda_error') or err.get('type')}, {failed_at})"
                                                if d.get("status") == "capture-failed" else "")
             + f" [expect {rules or '-'}]; {time.perf_counter() - t0:.0f} s")
    captured = d.get("status") == "captured"
    if captured:
        whole += f"; the whole step captures (replay {(d.get('replay') or {}).get('status')}): piecewise not judged"
    verdict = [ln for ln in r.stdout.splitlines() if ln.startswith("whole step")]
    piece_row(row, check, d, whole, judge=not captured, verdict=verdict[-1] if verdict else "")
    if verdict:
        print("   verdict:", verdict[-1], flush=True)


def section_partial(row: Callable, cgtool: Callable, out_dir: str, work: str) -> None:
    t0 = time.perf_counter()
    probe = subprocess.Popen([sys.executable, "tools/partial_probe.py"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, cwd=ROOT)
    log: list[str] = []
    for script, depth in (("samples/partial/module_breaks.py", "1"), ("samples/partial/llama_loss_log.py", "2")):
        modules_row(row, cgtool, work, script, depth, log)
    try:
        text, _ = probe.communicate(timeout=max(10.0, 120 - (time.perf_counter() - t0)))
    except subprocess.TimeoutExpired:
        probe.kill()
        text = (probe.communicate()[0] or "") + "\n(killed: past its time)"
    with open(os.path.join(out_dir, "partial_probe.txt"), "w") as fh:
        fh.write(text)
    for line in text.splitlines():
        if line.startswith("PROBE "):
            row("partial probe " + line[6:].split(":", 1)[0], "FAILED" not in line, line.split(":", 1)[1].strip()[:400])
    for path in sorted(glob.glob(os.path.join(ROOT, "samples", "partial", "*.py"))):
        name = os.path.relpath(path, ROOT)
        check = f"partial bench --piecewise {name}"
        if time.perf_counter() - t0 > SECTION_BUDGET_S:
            row(check, None, "not run: the section's time is up")
            continue
        try:
            r = cgtool("bench", name, "--piecewise", "--budget-s", "2", "--json", "--timeout", "90", timeout=200)
        except subprocess.TimeoutExpired:
            row(check, False, "no result in 200 s")
            continue
        log.append(f"== bench {name} --piecewise exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}")
        try:
            d = json.loads(r.stdout)
        except json.JSONDecodeError:
            row(check, False, f"exit {r.returncode}: {r.stderr[-300:]}")
            continue
        rules = ",".join(sorted({rule for _, rule in markers(path)}))
        piece_row(row, check, d, f"whole step breaks ({rules or 'see the sample'}); exit {r.returncode}")
    out = os.path.join(work, "capture", "partial_item_sync")
    check = "partial capture --piecewise verdict + DOT per piece (item_sync)"
    try:
        r = cgtool("capture", "samples/hazards/item_sync.py", "--piecewise", "--out", out, "--timeout", "90", timeout=200)
        log.append(f"== capture item_sync --piecewise exit {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-2000:]}")
        dots = sorted(f for f in os.listdir(out) if f.startswith("graph-piece-")) if os.path.isdir(out) else []
        verdict = [ln for ln in r.stdout.splitlines() if ln.startswith("whole step")]
        row(check, bool(verdict) and bool(dots), f"exit {r.returncode}; {' '.join(verdict)[:300]}; files {dots}")
    except subprocess.TimeoutExpired:
        row(check, False, "no result in 200 s")
    with open(os.path.join(out_dir, "partial.txt"), "w") as fh:
        fh.write("\n".join(log))
    row("partial section wall time (info)", None, f"{time.perf_counter() - t0:.0f} s")


def _piecewise_over(row: Callable, cgtool: Callable, out_dir: str, work: str, paths: list[str], name: str) -> None:
    t0 = time.perf_counter()
    log: list[str] = []
    left: list[str] = []
    for path in paths:
        if time.perf_counter() - t0 > SECTION_BUDGET_S:
            left.append(os.path.basename(path))
            continue
        capture_piecewise_row(row, cgtool, work, path, log)
    with open(os.path.join(out_dir, f"{name}.txt"), "w") as fh:
        fh.write("\n".join(log))
    row(f"{name} section (info)", None, f"{len(paths) - len(left)} of {len(paths)} run in {time.perf_counter() - t0:.0f} s"
        + (f"; not run (time): {', '.join(left)}" if left else ""))


def section_partial_hazards(row: Callable, cgtool: Callable, out_dir: str, work: str) -> None:
    paths = [p for p in sorted(glob.glob(os.path.join(ROOT, "samples", "hazards", "*.py")))
             if not os.path.basename(p).startswith("clean_")]
    only = os.environ.get("CGTOOL_PARTIAL_ONLY")  # a comma-separated subset of names, for a rerun
    if only:
        paths = [p for p in paths if os.path.basename(p)[:-3] in only.split(",")]
    _piecewise_over(row, cgtool, out_dir, work, paths, "partial-hazards")


def section_partial_realworld(row: Callable, cgtool: Callable, out_dir: str, work: str) -> None:
    """The module map of a real MoE model (which blocks graph, which fail inside transformers), then piecewise on
    each real-library hazard, those whose whole step fails first."""
    log: list[str] = []
    modules_row(row, cgtool, work, "tests/realworld/hazards/hf_mixtral_moe_eager.py", "3", log)
    with open(os.path.join(out_dir, "partial-realworld-modules.txt"), "w") as fh:
        fh.write("\n".join(log))
    captures = ("hf_llama_decode_dynamic_cache", "hf_vit_train_adam_zero_grad")  # the whole step captures
    paths = sorted(glob.glob(os.path.join(ROOT, "tests", "realworld", "hazards", "*.py")),
                   key=lambda p: (os.path.basename(p)[:-3] in captures, p))
    _piecewise_over(row, cgtool, out_dir, work, paths, "partial-realworld")
