"""The corpus of library models (tests/realworld/) on the GPU, against plain-PyTorch truth.

The truth (tests/realworld/truth.py, no cgtool: does torch.cuda.graph capture the step, does replay on fresh
inputs match eager?) is a fixture; `cgtool lint` on the GPU, and `cgtool lint --cpu` on the same machine (the
timm and torchvision models do not run on the CPU-only test machine), must find no error on a clean model
(hf_llama_train included: its labels= loss was a CPU false alarm) and each `# expect:` marker of a hazard at the
user's line; `cgtool capture` of a clean model exits 0. The truths, the lint runs and the captures run side by
side once per session (about 7-8 minutes on an H100); $OUT/realworld-table.md puts them side by side.
CGTOOL_REALWORLD_ONLY=name,name runs a subset (-k selects tests, not the corpus the fixture runs): the final
runs split it in two, the clean models and the hazards."""

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

from cgtool.model.rules import GPU_ONLY_RULES

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
    """(truth by name, lint result by name, (exit, report) of each clean model's capture by name, `lint --cpu`
    result by name)."""
    t0 = time.perf_counter()
    rel = [os.path.relpath(p, ROOT) for p in SCRIPTS]
    with ThreadPoolExecutor(4) as pool:
        lint_f = pool.submit(cgtool_run, "lint", *rel, "--format", "json", "-j", "3", "--timeout", "400", timeout=900)
        cpu_f = pool.submit(cgtool_run, "lint", *rel, "--cpu", "--format", "json", "-j", "3", "--timeout", "400",
                            timeout=900)
        truths_f = pool.map(truth_of, SCRIPTS)
        truths = {os.path.basename(d["script"]): d for d in truths_f}
        lint, cpu = lint_f.result(), cpu_f.result()
    save_artifact("realworld_truth.json", json.dumps(truths, indent=1))
    lint_by, cpu_by = _by_name(lint, "realworld_lint.txt"), _by_name(cpu, "realworld_lint_cpu.txt")

    def capture(path: str) -> tuple[str, int, dict | None]:
        out = os.path.join(work, "realworld", os.path.basename(path)[:-3])
        r = cgtool_run("capture", path, "--out", out, "-q", timeout=600)
        return os.path.basename(path), r.returncode, read_json(os.path.join(out, "report.json"))

    with ThreadPoolExecutor(3) as pool:
        captures = {name: (code, rep) for name, code, rep in pool.map(capture, CLEAN)}
    print(f"realworld corpus: {time.perf_counter() - t0:.0f} s")
    _table(truths, lint_by, cpu_by, captures)
    return truths, lint_by, captures, cpu_by


def _by_name(r: subprocess.CompletedProcess, name: str) -> dict[str, dict]:
    try:
        return {os.path.basename(s["path"]): s for s in json.loads(r.stdout)["scripts"]}
    except (json.JSONDecodeError, KeyError):
        save_artifact(name, r.stdout + r.stderr[-4000:])
        return {}


def _marks(s: dict | None, gpu: bool) -> str:
    if s is None:
        return "NO RESULT"
    shown = [f"{f['rule']}@{f['line']}" + (f":{f['evidence']}" if gpu and f.get("evidence") else "")
             + ("" if f["severity"] == "error" else f" ({f['severity']})") for f in s["findings"]]
    return " ".join(shown + [f"script error: {e[:80]}" for e in s["errors"]]) or "-"


def _table(truths: dict, lint_by: dict, cpu_by: dict, captures: dict) -> None:
    rows = ["# Realworld corpus: plain PyTorch, `cgtool lint` on the GPU and with --cpu, `cgtool capture`", "",
            "| script | expected | torch | GPU lint (rule@line:evidence) | CPU lint | capture exit |",
            "|---|---|---|---|---|---|"]
    for p in SCRIPTS:
        name = os.path.basename(p)
        expect = " ".join(f"{r}@{n}" for n, r in markers(p)) or "clean"
        code = captures.get(name, ("-", None))[0]
        rows.append(f"| {name} | {expect} | {_plain(truths.get(name, {}))} | {_marks(lint_by.get(name), True)} | "
                    f"{_marks(cpu_by.get(name), False)} | {code} |")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "realworld-table.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(rows) + "\n")


@pytest.fixture
def truth(corpus_run):
    return corpus_run[0]


def _plain(t: dict) -> str:
    match = {True: "match", False: "MISMATCH"}.get(t.get("replay_match"), "-")
    return f"torch: capture {t.get('capture')}, replay {match}"


@pytest.mark.parametrize("path", CLEAN, ids=os.path.basename)
def test_clean_model_captures_like_plain_pytorch(path, truth, corpus_run, measured):
    name = os.path.basename(path)
    _truths, lint_by, captures, cpu_by = corpus_run
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
    cpu = cpu_by.get(name)
    assert cpu is not None, "no lint --cpu result"
    cpu_errors = [f"{f['rule']}@{f['line']}: {f['message'][:120]}" for f in cpu["findings"] if f["severity"] == "error"]
    assert not cpu_errors and not cpu["errors"], (cpu_errors, cpu["errors"])  # no CPU false alarm either


def test_the_llama_training_step_is_in_the_clean_corpus():
    """Issue 20's false alarm: a Llama training step whose loss comes through `labels=` (no CG402 on CPU or GPU)."""
    if os.environ.get("CGTOOL_REALWORLD_ONLY"):
        pytest.skip("a subset of the corpus")
    assert any(os.path.basename(p) == "hf_llama_train.py" for p in CLEAN)


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
    cpu = corpus_run[3].get(name)
    assert cpu is not None, "no lint --cpu result"
    on_cpu = {(f["line"], f["rule"]) for f in cpu["findings"] if f["severity"] == "error"}
    missing_cpu = [f"{r}@{n}" for n, r in expect if r not in GPU_ONLY_RULES and (n, r) not in on_cpu]
    assert not missing_cpu, f"CPU missed {missing_cpu}; errors {sorted(on_cpu)}"


def test_lint_cost_on_the_largest_model(truth, cgtool, measured):
    """`cgtool lint` (GPU) on the clean model with the longest eager step: clean (exit 0), its wall time recorded."""
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
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
