"""The corpus of library models (tests/realworld/) on the GPU, against plain-PyTorch truth.

The truth (tests/realworld/truth.py, no cgtool: does torch.cuda.graph capture the step, does replay on fresh
inputs match eager?) is a fixture; `cgtool lint` on the GPU must find no error on a clean model and each
`# expect:` marker of a hazard at the user's line; `cgtool capture` of a clean model exits 0. The truths, the
lint run and the captures run side by side once per session (about 6-8 minutes on an H100);
CGTOOL_REALWORLD_ONLY=name,name reruns a subset."""

import glob
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT
from expect_markers import markers
from gpu.runs import cgtool_run, read_json, save_artifact

pytestmark = pytest.mark.gpu
CORPUS = os.path.join(ROOT, "tests", "realworld")


def corpus() -> list[str]:
    paths = sorted(glob.glob(os.path.join(CORPUS, "clean", "*.py"))) + sorted(glob.glob(os.path.join(CORPUS, "hazards", "*.py")))
    only = os.environ.get("CGTOOL_REALWORLD_ONLY")
    return [p for p in paths if os.path.basename(p)[:-3] in only.split(",")] if only else paths


SCRIPTS = corpus()
CLEAN = [p for p in SCRIPTS if f"{os.sep}clean{os.sep}" in p]
HAZARDS = [p for p in SCRIPTS if f"{os.sep}hazards{os.sep}" in p]


def truth_of(path: str) -> dict:
    """Plain PyTorch's verdict on one script (its own process, as truth.py runs each)."""
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


@pytest.fixture(scope="module")
def corpus_run(work):
    """(truth by name, lint result by name, (exit, report) of each clean model's capture by name)."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        truths_f = pool.map(truth_of, SCRIPTS)
        lint_f = pool.submit(cgtool_run, "lint", *(os.path.relpath(p, ROOT) for p in SCRIPTS), "--format", "json",
                             "-j", "3", "--timeout", "400", timeout=900)
        truths = {os.path.basename(d["script"]): d for d in truths_f}
        lint = lint_f.result()
    save_artifact("realworld_truth.json", json.dumps(truths, indent=1))
    try:
        lint_by = {os.path.basename(s["path"]): s for s in json.loads(lint.stdout)["scripts"]}
    except (json.JSONDecodeError, KeyError):
        save_artifact("realworld_lint.txt", lint.stdout + lint.stderr[-4000:])
        lint_by = {}

    def capture(path: str) -> tuple[str, int, dict | None]:
        out = os.path.join(work, "realworld", os.path.basename(path)[:-3])
        r = cgtool_run("capture", path, "--out", out, "-q", timeout=600)
        return os.path.basename(path), r.returncode, read_json(os.path.join(out, "report.json"))

    with ThreadPoolExecutor(3) as pool:
        captures = {name: (code, rep) for name, code, rep in pool.map(capture, CLEAN)}
    print(f"realworld corpus: {time.perf_counter() - t0:.0f} s")
    return truths, lint_by, captures


@pytest.fixture
def truth(corpus_run):
    return corpus_run[0]


def _plain(t: dict) -> str:
    match = {True: "match", False: "MISMATCH"}.get(t.get("replay_match"), "-")
    return f"torch: capture {t.get('capture')}, replay {match}"


@pytest.mark.parametrize("path", CLEAN, ids=os.path.basename)
def test_clean_model_captures_like_plain_pytorch(path, truth, corpus_run, measured):
    name = os.path.basename(path)
    _truths, lint_by, captures = corpus_run
    t, lint = truth.get(name, {}), lint_by.get(name)
    code, rep = captures.get(name, (None, None))
    evidence: dict[str, int] = {}
    for f in (rep or {}).get("findings", []):
        if f.get("evidence"):
            evidence[f["evidence"]] = evidence.get(f["evidence"], 0) + 1
    measured(f"{_plain(t)}; capture exit {code}, evidence {evidence or '-'}", eager_ms=t.get("eager_ms"))
    assert t.get("capture") == "ok" and t.get("replay_match") is True, f"plain PyTorch: {t}"
    assert lint is not None, "no lint result"
    errors = [f"{f['rule']}@{f['line']}" for f in lint["findings"] if f["severity"] == "error"]
    assert not errors and not lint["errors"], (errors, lint["errors"])
    assert code == 0


@pytest.mark.parametrize("path", HAZARDS, ids=os.path.basename)
def test_library_hazard_found_at_the_user_line(path, truth, corpus_run, measured):
    name = os.path.basename(path)
    lint = corpus_run[1].get(name)
    assert lint is not None, "no lint result"
    found = {(f["line"], f["rule"]): f for f in lint["findings"] if f["severity"] == "error"}
    expect = markers(path)
    measured(f"{_plain(truth.get(name, {}))}; " + "; ".join(
        f"{rule}@{line} via {(found.get((line, rule)) or {}).get('library') or 'the user line'}" for line, rule in expect))
    missing = [f"{rule}@{line}" for line, rule in expect if (line, rule) not in found]
    assert expect and not missing, f"missing {missing}; errors {sorted(found)}"


def test_lint_cost_on_the_largest_model(truth, cgtool, measured):
    """Information: `cgtool lint` (GPU) wall time on the clean model with the longest eager step."""
    timed = [(d.get("eager_ms") or 0, name) for name, d in truth.items()
             if f"{os.sep}clean{os.sep}" in d.get("script", "") and d.get("eager_ms")]
    if not timed:
        pytest.skip("no clean model was timed")
    eager_ms, name = max(timed)
    path = next(p for p in CLEAN if os.path.basename(p) == name)
    t0 = time.perf_counter()
    r = cgtool("lint", path, "--format", "json", timeout=600)
    wall = time.perf_counter() - t0
    measured(f"lint {name}: {wall:.1f} s vs one eager step {eager_ms:.2f} ms", lint_s=round(wall, 1),
             ratio=round(wall * 1e3 / eager_ms))
    assert r.returncode in (0, 1)
