"""Issue 20: every hazard in one run. `cgtool lint` on the GPU and with --cpu over scripts with three or more
hazards each (samples/hazards/multi/, tests/data/unseen_multi/) and the stream/event query sample: every
`# expect:` marker found at its line on both paths, each GPU finding marked (confirmed / refuted / untested /
not-reached), and a side-by-side table in $OUT/issue20-tables.md. Truth first: plain PyTorch shows that the
reseed and the rebinding really make replay differ from eager, and that Stream.query() and Event.query()
fail a capture at the query. And a CPU false alarm at a line the real capture got past is refuted in the same
run (tests/data/refuted/host_table.py)."""

import glob
import os

import pytest
from conftest import ROOT
from expect_markers import markers

from gpu.runs import save_artifact

pytestmark = pytest.mark.gpu
EVENT_QUERY = os.path.join("samples", "hazards", "event_query.py")
# a script with helper modules is a folder with step.py; its markers are in every file of the folder
PATHS = sorted(os.path.relpath(p, ROOT) for p in [
    *glob.glob(os.path.join(ROOT, "samples", "hazards", "multi", "*.py")),
    *glob.glob(os.path.join(ROOT, "tests", "data", "unseen_multi", "*.py")),
    *glob.glob(os.path.join(ROOT, "tests", "data", "unseen_multi", "*", "step.py")),
    os.path.join(ROOT, EVENT_QUERY)])
_ROWS: dict[str, tuple] = {}


def expected(path: str) -> list[tuple[str, int, str]]:
    """(real file path, line, rule) of every `# expect:` marker of the script (and of its folder's modules)."""
    full = os.path.join(ROOT, path)
    files = [full] if os.path.basename(path) != "step.py" else sorted(glob.glob(os.path.join(os.path.dirname(full), "*.py")))
    return [(os.path.realpath(f), n, r) for f in files for n, r in markers(f)]


def _lint(cgtool, *extra):
    import json

    r = cgtool("lint", *PATHS, "--format", "json", "-j", "4", *extra, timeout=900)
    data = json.loads(r.stdout)
    return {os.path.relpath(os.path.abspath(s["path"]), ROOT): s for s in data["scripts"]}


@pytest.fixture(scope="module")
def both(cgtool):
    return _lint(cgtool), _lint(cgtool, "--cpu")


def _by_place(script: dict) -> dict[tuple[str, int, str], dict]:
    return {(os.path.realpath(f["file"]), f["line"], f["rule"]): f for f in script["findings"] if f.get("file")}


def _place(path: str, file: str, line: int, rule: str) -> str:
    same = file == os.path.realpath(os.path.join(ROOT, path))
    return f"{rule}@{'' if same else os.path.basename(file) + ':'}{line}"


@pytest.mark.parametrize("path", PATHS)
def test_every_expected_hazard_in_one_run(path, both):
    gpu, cpu = both[0][path], both[1][path]
    expect = expected(path)
    g, c = _by_place(gpu), _by_place(cpu)
    marked = {(file, line) for file, line, _ in expect}
    failed = [_place(path, *k) for k, f in g.items() if f["evidence"] == "confirmed"]
    other_gpu = [f"{_place(path, *k)}:{f['evidence']}" for k, f in g.items()
                 if f["severity"] == "error" and k[:2] not in marked]
    other_cpu = [_place(path, *k) for k, f in c.items() if f["severity"] == "error" and k[:2] not in marked]
    _ROWS[path] = (len(expect), sum(k in g for k in expect), sum(k in c for k in expect), " ".join(failed) or "-",
                   " ".join(f"{_place(path, *k)}:{(g.get(k) or {}).get('evidence') or 'MISSING'}" for k in expect),
                   " ".join(other_gpu) or "-", " ".join(other_cpu) or "-")
    _write_table()
    assert gpu["device"] == "cuda"
    missing_gpu = [_place(path, *k) for k in expect if k not in g]
    missing_cpu = [_place(path, *k) for k in expect if k not in c]
    assert not missing_gpu, f"GPU missed {missing_gpu}; found {sorted(g)}"
    assert not missing_cpu, f"CPU missed {missing_cpu}; found {sorted(c)}"
    for file in {k[0] for k in g}:
        lines = [k[1] for k in g if k[0] == file]
        assert lines == sorted(lines)  # one list, by line
    for k in expect:
        assert g[k]["evidence"] in ("confirmed", "untested", "not-reached"), g[k]  # never refuted
    if path != EVENT_QUERY:
        assert failed, "the cause of the failed capture"


def _write_table():
    rows = [_ROWS[k] for k in sorted(_ROWS)]
    total = [sum(r[i] for r in rows) for i in range(3)]
    lines = ["# Issue 20: every hazard in one `cgtool lint` run (GPU, and the same scripts with --cpu)", "",
             "Marks: confirmed (the capture failed there), untested (the capture got past it or cannot test it: a "
             "replay hazard), not-reached (after the failing line; from the CPU analysis of the whole step), "
             "MISSING (not found on the GPU). A line in a helper module is named file:line.", "",
             "| script | expected | GPU found | CPU found | capture failed at | GPU marks (rule@line:evidence) "
             "| other GPU errors | other CPU errors |",
             "|---|---|---|---|---|---|---|---|",
             *[f"| {k} | " + " | ".join(str(v) for v in _ROWS[k]) + " |" for k in sorted(_ROWS)],
             f"| **all {len(rows)} scripts** | {total[0]} | {total[1]} | {total[2]} | | | | |", ""]
    out = os.environ.get("OUT")
    if out:  # rewritten whole after each script (save_artifact appends)
        with open(os.path.join(out, "issue20-tables.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))


def _replay_vs_eager(step, make_state, x, between=None):
    """(eager outputs of three iterations, replayed outputs of three replays) from identical state, copied to
    the host (`.cpu()`: no GPU allocation between replays). `between(state)` runs after capture, before the
    first replay (an allocation that may reuse memory the step freed during capture)."""
    import torch

    outs = []
    for replay in (False, True):
        state = make_state()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                step(state, x)
        torch.cuda.current_stream().wait_stream(side)
        state = make_state()
        if not replay:
            outs.append([step(state, x).cpu() for _ in range(3)])
            continue
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(state, x)
        if between is not None:
            between(state)
        got = []
        for _ in range(3):
            g.replay()
            got.append(out.cpu())
        outs.append(got)
    return outs


def test_truth_reseed_makes_replay_differ_from_eager():
    import torch

    x = torch.randn(64, 128, device="cuda")

    def reseed(state, x):
        torch.manual_seed(1234)
        return torch.nn.functional.dropout(x, 0.5)

    eager, replay = _replay_vs_eager(reseed, lambda: None, x)
    save_artifact("issue20-truth.txt", f"reseed: eager masks equal {torch.equal(eager[0], eager[1])}, replay masks "
                  f"equal {torch.equal(replay[0], replay[1])}")
    assert torch.equal(eager[0], eager[1])  # eager: the same mask every iteration
    assert not torch.equal(replay[0], replay[1])  # replay: the generator moves on


def test_truth_rebind_makes_replay_differ_from_eager():
    """Replay reads the memory of the tensor that was the state at capture. Kept alive elsewhere, that tensor
    never changes, so the average never moves; dropped by the step (the usual case) it is freed during capture
    and replay reads whatever later reuses that memory (callB, H200: a clone after the first replay took it, so
    the second replay read the first replay's output). Either way replay is not eager's running average."""
    import torch

    x = torch.randn(64, 128, device="cuda")

    def rebind(state, x):
        state["avg"] = 0.9 * state["avg"] + 0.1 * x.mean(0)
        return state["avg"]

    def kept():
        z = torch.zeros(128, device="cuda")
        return {"avg": z, "keep": z}

    def dropped():
        return {"avg": torch.zeros(128, device="cuda")}

    reuse = []

    def allocate(state):  # a same-size allocation after capture, as any later code makes
        reuse.append(torch.full((128,), 7.0, device="cuda"))

    lines = []
    for name, make, between in (("kept", kept, None), ("dropped", dropped, None), ("dropped+alloc", dropped, allocate)):
        eager, replay = _replay_vs_eager(rebind, make, x, between)
        lines.append(f"rebind {name}: eager[:3]={[round(float(e[0]), 5) for e in eager]} "
                     f"replay[:3]={[round(float(r[0]), 5) for r in replay]}")
        assert not torch.equal(eager[0], eager[1])  # eager: the average moves
        assert not torch.allclose(replay[2], eager[2])  # replay is not eager's running average
        if name == "kept":
            assert torch.equal(replay[0], replay[1]) and torch.equal(replay[1], replay[2])  # never moves
    save_artifact("issue20-truth.txt", "\n".join(lines))


_QUERY_PROBE = """import torch, traceback
x = torch.ones(8, device="cuda")
e = torch.cuda.Event()
other = torch.cuda.Stream()
s = torch.cuda.Stream()
g = torch.cuda.CUDAGraph()
{pre}
try:
    with torch.cuda.graph(g, stream=s):
        y = x * 2
        {query}  # the query
        z = y + 1
    print("CAPTURED")
except Exception as exc:
    lines = [fr.lineno for fr in traceback.extract_tb(exc.__traceback__) if fr.filename == __file__]
    where = "at the query" if 11 in lines else f"at line {{lines[-1] if lines else '?'}} (not the query, line 11)"
    print("FAILED", where, "|", type(exc).__name__, "|", str(exc).splitlines()[0])
"""
_QUERIES = {"Event.query() of an event recorded in the capture": ("", "e.record(); e.query()"),
            "Event.query() of an event recorded before the capture": ("e.record(); torch.cuda.synchronize()",
                                                                      "e.query()"),
            "Stream.query() of the capturing stream": ("", "torch.cuda.current_stream().query()"),
            "Stream.query() of another stream": ("", "other.query()")}


def test_truth_queries_fail_a_capture(tmp_path):
    """CG105's claim, in plain PyTorch: each query inside a capture fails the capture with a capture error. (callC2,
    H100: the query itself returns; the error is raised when the capture ends, at the `with` line, for all four.) One process per case (a failed capture can poison the context)."""
    import subprocess
    import sys

    procs = {}
    for name, (pre, query) in _QUERIES.items():
        path = tmp_path / f"q{len(procs)}.py"
        path.write_text(_QUERY_PROBE.format(pre=pre, query=query))
        assert path.read_text().splitlines()[10].strip().endswith("# the query")
        procs[name] = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
    got = {name: p.communicate(timeout=180) for name, p in procs.items()}
    rows = [f"| {name} | {out.strip().splitlines()[-1] if out.strip() else err.strip()[-300:]} |"
            for name, (out, err) in got.items()]
    save_artifact("issue20-event-query-truth.txt", "\n".join(["| query inside torch.cuda.graph | result |", "|---|---|", *rows]))
    for name, (out, err) in got.items():
        assert out.startswith("FAILED"), f"{name}: {out} {err[-1500:]}"
        assert "capture" in out.split("|")[-1], f"{name}: {out}"  # a capture error, as CG105 says


def test_a_cpu_false_alarm_at_a_line_the_capture_got_past_is_refuted(cgtool):
    """tests/data/refuted/host_table.py: the CPU analysis's CG101 at a host tensor's `.item()` (a line the real
    capture ran without failing) is refuted, as info; the synchronize after it is the confirmed cause."""
    import json

    path = os.path.join("tests", "data", "refuted", "host_table.py")
    r = cgtool("lint", path, "--format", "json", timeout=600)
    s = json.loads(r.stdout)["scripts"][0]
    got = {(f["rule"], f["line"]): f for f in s["findings"]}
    save_artifact("issue20-refuted.txt", "\n".join(f"{f['rule']}@{f['line']} {f['severity']} {f['evidence']}: "
                                                   f"{f['message']} [{f['reason']}]" for f in s["findings"]))
    assert s["device"] == "cuda"
    assert got[("CG104", 28)]["evidence"] == "confirmed", got
    f = got.get(("CG101", 27))
    assert f is not None and f["evidence"] == "refuted" and f["severity"] == "info", got
    assert "ran this line without failing" in f["reason"] and "ran this line" not in f["message"]
