"""gpu_check section `compiled`: the torch.compile samples (samples/compiled/) on the GPU.

1. `cgtool capture` of every sample (3 at a time, beside the lint run: timings are indicative): a table per sample → graphs recorded, re-records, skips with
   torch's reason and the user's line, share of kernels in graphs, timing three ways (eager, compiled without CUDA
   graphs, with them), observing cost; each `# expect:` marker found at its line, no error elsewhere.
2. The earlier failure is gone: clean_inference's report shows torch.compile's own graphs (Triton kernels in the
   trees' graphs, status "compiled", no cgtool capture) and no CG101.
3. `cgtool lint samples/compiled` on the GPU gives the same rule/line pairs as capture.
4. Cost: observing adds ×N to a reduce-overhead step's steady iteration time (from the reports).
Run: `bash tools/gpu_check.sh compiled`.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.expect_markers import markers

SAMPLES = os.path.join(ROOT, "samples", "compiled")


def _capture(cgtool: Callable, path: str, work: str) -> tuple[str, dict | None, str]:
    out = os.path.join(work, "compiled", os.path.basename(path)[:-3])
    r = cgtool("capture", path, "--out", out, "--timeout", "300", timeout=400)
    try:
        with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
            return path, json.load(fh), r.stdout + r.stderr
    except (OSError, json.JSONDecodeError):
        return path, None, r.stdout + r.stderr


def _fmt(d: dict) -> str:
    c = d.get("compiled") or {}
    share = c.get("kernel_share")
    t = c.get("timings_us") or {}
    skips = [e for e in c.get("events", []) if e["kind"] in ("skip", "partition")]
    sk = "; ".join(f"{e['reason'][:50]}@{(e.get('frame') or {}).get('line', '-')}" for e in skips) or "-"
    fb = ",".join(sorted({e["kind"] for e in c.get("events", []) if e["kind"] in ("pending-backward",
                                                                                   "overwritten-output")})) or "-"
    rerec = sum(f.get("rerecords", 0) for f in c.get("functions", []))
    timing = " / ".join(f"{k} {v:.0f}us" for k, v in t.items()) or "-"
    return (f"graphs {c.get('graphs_recorded')} (fns {len(c.get('functions', []))}), re-records {rerec}, "
            f"skips {sk}, fallbacks {fb}, kernels in graphs {'-' if share is None else f'{share:.0%}'}, "
            f"triton/step {c.get('triton_kernels')}, pool {((c.get('pool_bytes') or 0) / 2**20):.0f} MiB, "
            f"timing {timing}, observe x{c.get('observe_cost')}")


def section(row: Callable, cgtool: Callable, out_dir: str, work: str) -> None:
    t0 = time.perf_counter()
    scripts = sorted(glob.glob(os.path.join(SAMPLES, "*.py")))
    with ThreadPoolExecutor(1) as lint_pool, ThreadPoolExecutor(3) as pool:  # lint alongside 3 captures at a time
        lint_f = lint_pool.submit(cgtool, "lint", SAMPLES, "--format", "json", "-j", "2", "--timeout", "300",
                                  timeout=600)
        results = list(pool.map(lambda p: _capture(cgtool, p, work), scripts))
        lint = lint_f.result()
    log, costs, pairs = [], [], {}
    for path, d, text in results:
        name = os.path.basename(path)
        log.append(f"===== {name}\n{text[-6000:]}")
        if d is None:
            row(f"compiled {name}", False, f"no report: {text[-300:]}")
            continue
        exp = set(markers(path))
        found = {(f["line"], f["rule"]) for f in d["findings"] if os.path.basename(f["file"] or "") == name}
        pairs[name] = found
        errs = [f"{f['rule']}@{f['line']}" for f in d["findings"] if f["severity"] == "error"
                and (f["line"], f["rule"]) not in exp]
        missing = sorted(exp - found)
        ok = d["status"] == "compiled" and not missing and not errs
        row(f"compiled {name}", ok, f"{_fmt(d)}; missing {missing or '-'}; other errors {errs or '-'}")
        cost = (d.get("compiled") or {}).get("observe_cost")
        if cost:
            costs.append(cost)
        if name == "clean_inference.py":
            c = d.get("compiled") or {}
            kernels = [k[0] for g in c.get("graphs", []) for k in g.get("kernels", [])]
            triton = [k for k in kernels if k.startswith("triton_")]
            cg101 = [f for f in d["findings"] if f["rule"] == "CG101"]
            row("earlier failure gone: reduce-overhead shows torch.compile's graphs", bool(triton) and not cg101
                and d.get("graph") is None and c.get("graphs_recorded") == 1,
                f"status {d['status']}, {len(c.get('graphs', []))} graph(s), kernels {kernels[:4]}, CG101 {len(cg101)}")
    try:
        by = {os.path.basename(s["path"]): {(f["line"], f["rule"]) for f in s["findings"]
                                            if os.path.basename(f.get("file") or "") == os.path.basename(s["path"])}
              for s in json.loads(lint.stdout)["scripts"]}
        same = [n for n in pairs if by.get(n) == pairs[n]]
        row("compiled: lint on the GPU gives capture's findings", len(same) == len(pairs),
            f"{len(same)}/{len(pairs)} the same; differ: {sorted(set(pairs) - set(same))}")
    except (json.JSONDecodeError, KeyError) as exc:
        row("compiled: lint on the GPU gives capture's findings", False, f"{exc}: {lint.stderr[-300:]}")
    if costs:
        row("compiled: observing cost (steady step time ratio, info)", None,
            f"median x{sorted(costs)[len(costs) // 2]:.3f} over {len(costs)} samples (min {min(costs):.3f}, "
            f"max {max(costs):.3f})")
    with open(os.path.join(out_dir, "compiled.txt"), "w") as fh:
        fh.write("\n".join(log))
    row("compiled section wall time < 240 s (info)", None, f"{time.perf_counter() - t0:.0f} s")
