"""gpu_check section `realworld`: the corpus of library models (tests/realworld/) three ways on the GPU.

1. Plain PyTorch truth (tests/realworld/truth.py, no cgtool): does torch.cuda.graph capture the step, and does
   replay on fresh inputs match eager?
2. `cgtool lint` on the GPU: error findings (none on a clean model), each `# expect:` marker found at the user's
   line, with the library frame named where the op ran inside a library.
3. `cgtool capture` on the clean models: exit 0, and the report marks each trace finding confirmed / refuted /
   untested by the real capture.
Plus the cost: `cgtool lint` wall time on the largest model against one eager step of it.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "realworld")
sys.path.insert(0, ROOT)
from tests.expect_markers import markers  # noqa: E402


def corpus() -> list[str]:
    """Every corpus script, or those named in CGTOOL_REALWORLD_ONLY (comma-separated, without .py) for a rerun."""
    paths = sorted(glob.glob(os.path.join(CORPUS, "clean", "*.py"))) + sorted(glob.glob(os.path.join(CORPUS, "hazards", "*.py")))
    only = os.environ.get("CGTOOL_REALWORLD_ONLY")
    return [p for p in paths if os.path.basename(p)[:-3] in only.split(",")] if only else paths


def truth(path: str) -> dict:
    r = subprocess.run([sys.executable, os.path.join(CORPUS, "truth.py"), path, "--timeout", "300"],
                       capture_output=True, text=True, timeout=400, cwd=ROOT)
    for line in reversed(r.stdout.splitlines()):
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "script" in d:
            return d
    return {"script": path, "capture": "not-run", "error": (r.stderr or r.stdout)[-300:]}


def section_realworld(row: Callable, cgtool: Callable, out_dir: str, work: str) -> None:
    scripts = corpus()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        truths_f = pool.map(truth, scripts)
        lint_f = pool.submit(cgtool, "lint", *(os.path.relpath(p, ROOT) for p in scripts), "--format", "json", "-j",
                             "3", "--timeout", "400", timeout=900)
        truths = {os.path.basename(d["script"]): d for d in truths_f}
        lint = lint_f.result()
    with open(os.path.join(out_dir, "realworld_truth.json"), "w") as fh:
        json.dump(truths, fh, indent=1)
    with open(os.path.join(out_dir, "realworld_lint.json"), "w") as fh:
        fh.write(lint.stdout + "\n" + lint.stderr[-4000:])
    try:
        by_script = {os.path.basename(s["path"]): s for s in json.loads(lint.stdout)["scripts"]}
    except (json.JSONDecodeError, KeyError):
        row("realworld lint", False, f"exit {lint.returncode}: {lint.stderr[-300:]}")
        by_script = {}
    print(f"-- realworld truth + lint: {time.perf_counter() - t0:.0f} s", flush=True)

    def capture(path: str) -> tuple[str, int, dict | None]:
        out = os.path.join(work, "realworld", os.path.basename(path)[:-3])
        r = cgtool("capture", path, "--out", out, "-q", timeout=600)
        try:
            return path, r.returncode, json.load(open(os.path.join(out, "report.json")))
        except (OSError, json.JSONDecodeError):
            return path, r.returncode, None

    clean = [p for p in scripts if "/clean/" in p]
    with ThreadPoolExecutor(3) as pool:
        captures = {os.path.basename(p): (code, rep) for p, code, rep in pool.map(capture, clean)}
    for path in scripts:
        name = os.path.basename(path)
        t, lint_s = truths.get(name, {}), by_script.get(name)
        plain = f"torch: capture {t.get('capture')}, replay {'match' if t.get('replay_match') else 'MISMATCH' if t.get('replay_match') is False else '-'}"
        if lint_s is None:
            row(f"realworld {name}", False, f"{plain}; lint: no result")
            continue
        errs = [f for f in lint_s["findings"] if f["severity"] == "error"]
        shown = ", ".join(f"{f['rule']}@{f['line']}" + (f" ({f['library']})" if f.get("library") else "") for f in errs)
        if "/clean/" in path:
            code, rep = captures.get(name, (None, None))
            ev = {}
            for f in (rep or {}).get("findings", []):
                if f.get("evidence"):
                    ev[f["evidence"]] = ev.get(f["evidence"], 0) + 1
            truth_ok = t.get("capture") == "ok" and t.get("replay_match") is True
            ok = truth_ok and not errs and not lint_s["errors"] and code == 0
            row(f"realworld {name}", ok, f"{plain}; lint errors: {shown or 'none'} {lint_s['errors'] or ''}; "
                f"capture exit {code}, evidence {ev or '-'}")
        else:
            exp = markers(path)
            found = {(f["line"], f["rule"]): f for f in lint_s["findings"] if f["severity"] == "error"}
            hit = [found.get(e) for e in exp]
            ok = all(hit)
            libs = "; ".join(f"{f['rule']}@{f['line']} via {f.get('library') or 'the user line'}" for f in hit if f)
            row(f"realworld {name}", ok, f"{plain}; expect {', '.join(f'{r}@{ln}' for ln, r in exp)} → "
                f"{'found' if ok else 'MISSING'}: {libs}; all errors: {shown}")
    # cost: lint alone on the largest model (by eager step time) against one eager step of it
    timed = [(d.get("eager_ms") or 0, name) for name, d in truths.items() if "clean/" in d.get("script", "") and d.get("eager_ms")]
    if timed:
        eager_ms, name = max(timed)
        path = next(p for p in scripts if os.path.basename(p) == name)
        t1 = time.perf_counter()
        r = cgtool("lint", path, "--format", "json", timeout=600)
        wall = time.perf_counter() - t1
        row(f"realworld cost: lint (GPU) on the largest model {name}", None,
            f"lint {wall:.1f} s wall (exit {r.returncode}) vs one eager step {eager_ms:.2f} ms: {wall * 1e3 / eager_ms:,.0f}x")
