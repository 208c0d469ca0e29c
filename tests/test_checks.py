"""The CPU analysis on every hazard sample and on unseen-style scripts: each `# expect: CGxxx` line is
found with its rule and category, clean samples get no error, and no error is invented elsewhere."""

from __future__ import annotations

import glob
import json
import os

import pytest
from expect_markers import markers

pytest.importorskip("torch")

from cgtool.checks import CHECKS, run_checks  # noqa: E402
from cgtool.checks.shapes import _separating_branch  # noqa: E402
from cgtool.model.finding import CATEGORIES  # noqa: E402
from cgtool.model.rules import (
    GPU_ONLY_RULES,  # noqa: E402
    RULE_BY_ID,  # noqa: E402
)
from cgtool.model.trace import Iteration, OpRecord, StreamEvent, Trace  # noqa: E402
from cgtool.pipeline.cpu_analysis import analyze_on_cpu  # noqa: E402
from cgtool.script.contract import load_script  # noqa: E402
from cgtool.script.ranks import written_for_ranks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAZARDS = sorted(glob.glob(os.path.join(ROOT, "samples", "hazards", "*.py")))
CLEAN = [p for p in HAZARDS if os.path.basename(p).startswith("clean_")]
BROKEN = [p for p in HAZARDS if p not in CLEAN]
UNSEEN = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "unseen", "*", "step.py")))
# issue 20: three or more hazards in one script (samples/hazards/multi/, and unseen-style ones written to the contract)
# (a script with helper modules is a folder with step.py)
MULTI = sorted(glob.glob(os.path.join(ROOT, "samples", "hazards", "multi", "*.py")) +
               glob.glob(os.path.join(ROOT, "tests", "data", "unseen_multi", "*.py")) +
               glob.glob(os.path.join(ROOT, "tests", "data", "unseen_multi", "*", "step.py")))
# a script written for ranks needs a process group: `cgtool lint` runs it as a world of one (test below)
RANKED = [p for p in MULTI if written_for_ranks(p)]
MULTI = [p for p in MULTI if p not in RANKED]


def expectations(script: str) -> list[tuple[str, int, str]]:
    """(file, line, rule) for each `# expect:` marker: in the script, and for unseen cases in every
    file of its folder (hazards inside imported helper modules)."""
    files = [script] if os.path.basename(script) != "step.py" else sorted(glob.glob(os.path.join(os.path.dirname(script), "*.py")))
    return [(os.path.abspath(path), n, rule) for path in files for n, rule in markers(path)]


_cache: dict[str, tuple] = {}


def analysed(path: str) -> tuple:
    if path not in _cache:
        _cache[path] = analyze_on_cpu(load_script(path))
    return _cache[path]


def _short(findings) -> str:
    return "\n".join(f"  {f.rule} {os.path.basename(f.file or '?')}:{f.line} {f.message}" for f in findings)


@pytest.mark.parametrize("path", BROKEN + UNSEEN + MULTI, ids=lambda p: os.path.relpath(p, ROOT))
def test_expected_lines_are_found(path):
    trace, findings, errors = analysed(path)
    assert not errors, errors
    assert trace.tracer_error is None
    expected = expectations(path)
    assert expected, f"{path} marks no `# expect:` line"
    for file, line, rule in expected:
        if rule in GPU_ONLY_RULES and rule != "CG201":
            continue  # only the GPU run can establish it; test_no_error_is_invented covers the CPU run
        hits = [f for f in findings if f.rule == rule and f.file == file and f.line == line]
        assert hits, f"{rule} expected at {os.path.basename(file)}:{line}; found:\n{_short(findings)}"
        assert hits[0].category == RULE_BY_ID[rule].category
        assert hits[0].source and hits[0].message


@pytest.mark.parametrize("path", BROKEN + UNSEEN + MULTI, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_error_is_invented(path):
    """Every error-level finding is on a line the script marks as a hazard (GPU-only samples included)."""
    _, findings, _ = analysed(path)
    marked = {(file, line) for file, line, _ in expectations(path)}
    invented = [f for f in findings if f.severity == "error" and (f.file, f.line) not in marked]
    assert not invented, f"unexpected errors:\n{_short(invented)}"


@pytest.mark.parametrize("path", CLEAN, ids=os.path.basename)
def test_clean_samples_have_no_error(path):
    trace, findings, errors = analysed(path)
    assert not errors and trace.tracer_error is None
    assert [f for f in findings if f.severity == "error"] == []
    assert [it.phase for it in trace.iterations] == ["warmup"] * 3 + ["capture"]
    assert all(it.ops for it in trace.iterations)


def test_samples_cover_every_category():
    marked = {RULE_BY_ID[rule].category for p in BROKEN for _, _, rule in expectations(p)}
    # warmup: lazy init inside capture has no plausible CPU-run sample; distributed: samples/distributed/hazards,
    # run on 2 ranks by tests/test_distributed.py; compiled: samples/compiled, torch.compile's CUDA graphs, observed
    # only on a GPU (tests/test_compiled.py checks their markers against the recorded GPU run)
    assert set(CATEGORIES) - marked <= {"warmup", "distributed", "compiled"}
    for p in HAZARDS:
        with open(p, encoding="utf-8") as fh:
            assert fh.read().startswith('"""'), f"{p} lacks its docstring"


def test_multi_hazard_scripts_hold_three_hazards_or_more():
    assert len(MULTI) >= 7 and RANKED
    for p in MULTI + RANKED:
        assert len({(file, line) for file, line, _ in expectations(p)}) >= 3, p


def test_clean_samples_cover_the_brief():
    names = {os.path.basename(p) for p in CLEAN}
    assert {"clean_mlp_inference.py", "clean_train_adamw.py", "clean_two_streams.py",
            "clean_dropout_train.py"} <= names


def test_checks_run_on_a_reloaded_trace():
    """The checks work on plain data: a trace written to JSON and read back gives the same findings."""
    trace, findings, _ = analysed(os.path.join(ROOT, "samples", "hazards", "unjoined_stream.py"))
    again = Trace.from_json(json.loads(json.dumps(trace.to_json())))
    assert run_checks(again) == findings


def test_run_checks_dedupes_and_skips():
    from cgtool.model.rules import finding

    def twice(trace: Trace) -> list:
        return [finding("CG101", file="a.py", line=3), finding("CG101", "again", file="a.py", line=3)]

    trace = Trace(frames=[], iterations=[])
    assert len(run_checks(trace, [twice, twice])) == 1
    assert run_checks(trace, [twice], skip_rules={"CG101"}) == []
    assert CHECKS and all(callable(c) for c in CHECKS)


# ---- streams on hand-made traces ---------------------------------------------------------------

def _stream_trace(events: list[tuple[str, int | None, int | None, int]], op_streams: list[int]) -> Trace:
    from cgtool.model.frame import Frame

    frames = [Frame("/u/step.py", n, "step", f"line {n}") for n in range(1, 20)]
    ops = [OpRecord("aten", "aten.add", ((2,),), ("float32",), ("cpu",), frame=10 + k, stream=s)
           for k, s in enumerate(op_streams)]
    evs = [StreamEvent(0, pos, kind, s, t, frame=f) for kind, s, t, pos, f in
           [(k, s, t, p, 2 + n) for n, (k, s, t, p) in enumerate(events)]]
    return Trace(virtual_cuda=True, frames=frames, iterations=[Iteration(0, ops=ops)], events=evs,
                 default_stream=0, capture_stream=1)


def _rules(trace: Trace) -> list[str]:
    return [f.rule for f in run_checks(trace)]


def test_fork_and_join_is_clean():
    t = _stream_trace([("wait-stream", 2, 1, 0), ("switch", 2, None, 0), ("wait-stream", 1, 2, 1)], [2, 1])
    assert _rules(t) == []


def test_join_through_an_event_is_clean():
    t = _stream_trace([("wait-stream", 2, 1, 0), ("record-event", 2, 5, 1), ("wait-event", 1, 5, 1)], [2, 1])
    assert _rules(t) == []


def test_fork_without_join_is_unjoined():
    t = _stream_trace([("wait-stream", 2, 1, 0), ("switch", 2, None, 0)], [2])
    assert _rules(t) == ["CG203"]


def test_join_before_the_last_work_is_unjoined():
    t = _stream_trace([("wait-stream", 2, 1, 0), ("wait-stream", 1, 2, 1)], [2, 2])
    assert _rules(t) == ["CG203"]


def test_work_on_unforked_and_default_streams():
    assert _rules(_stream_trace([("switch", 3, None, 0)], [3])) == ["CG201", "CG201"]
    assert _rules(_stream_trace([], [0])) == ["CG202"]


def test_gpu_capture_uses_the_capturing_flag():
    from cgtool.model.frame import Frame

    ops = [OpRecord("aten", "aten.mm", frame=0, stream=7, capturing=True),
           OpRecord("aten", "aten.copy_", frame=0, stream=0, capturing=False)]
    t = Trace(device="cuda:0", frames=[Frame("/u/s.py", 4, "step", "x")], default_stream=0,
              iterations=[Iteration(0, "warmup", ops=list(ops)), Iteration(1, "capture", ops=list(ops))])
    assert _rules(t) == ["CG202"]


# ---- the branch finder -------------------------------------------------------------------------

def test_separating_branch(tmp_path):
    src = tmp_path / "b.py"
    src.write_text("def f(x, n):\n"            # 1
                   "    y = x\n"                # 2
                   "    if n % 2:\n"            # 3
                   "        y = y * 2\n"        # 4
                   "    else:\n"                # 5
                   "        y = y + 1\n"        # 6
                   "    for _ in range(n):\n"   # 7
                   "        y = y - 1\n"        # 8
                   "    return y\n")            # 9
    assert _separating_branch(str(src), 4, 6) == 3
    assert _separating_branch(str(src), 8, 9) == 7
    assert _separating_branch(str(src), 2, 9) is None


def test_the_steady_state_is_the_later_warmup_iterations():
    from cgtool.checks.common import compared_iterations
    from cgtool.model.trace import Iteration, OpRecord, Trace

    def trace(n: int) -> Trace:
        op = OpRecord("aten", "aten.mm", frame=0)
        its = [Iteration(i, "warmup", [op]) for i in range(n)] + [Iteration(n, "capture", [op])]
        return Trace(iterations=its)

    assert [it.index for it in compared_iterations(trace(2))] == [0, 1]
    assert [it.index for it in compared_iterations(trace(3))] == [1, 2]
    assert [it.index for it in compared_iterations(trace(4))] == [2, 3]
    assert [it.index for it in compared_iterations(trace(11))] == [5, 6, 7, 8, 9, 10]  # the capture is never compared


def test_an_empty_factory_copies_nothing(tmp_path):
    """Issue 20: transformers' DynamicLayer makes `torch.tensor([], device=...)` in a Llama training step
    (`labels=`); no bytes are copied, the GPU captures and replays it: no CG402. Non-empty data still is one."""
    p = tmp_path / "empty_factory.py"
    p.write_text("import torch\n\ndef setup(device):\n    return {}\n\n"
                 "def inputs(i, device):\n    return {'x': torch.ones(4, device=device)}\n\n"
                 "def step(x):\n    e = torch.tensor([], dtype=x.dtype, device=x.device)\n"
                 "    n = torch.tensor([[], []], device=x.device)\n"
                 "    k = torch.tensor([2.0], device=x.device)\n    return torch.cat([x, e]) * k, n\n")
    _, findings, errors = analyze_on_cpu(load_script(str(p)))
    assert not errors
    assert [(f.rule, f.line) for f in findings if f.severity == "error"] == [("CG402", 12)]


def test_a_sync_on_a_tensor_made_where_the_cpu_does_not_look_is_a_warning(tmp_path):
    """Issue 20, acceptance 3: a tensor of setup's state made in another thread (TorchFunctionMode is per thread)
    may be on the host or the GPU; the CPU cannot decide, so a sync on it, or on what the step computes from it
    alone, is a warning naming it. A sync on what mixes it with a device tensor, and on a tensor the CPU saw
    made on the device, stay errors; a host tensor it saw made is no sync at all."""
    p = tmp_path / "threaded_table.py"
    p.write_text("from concurrent.futures import ThreadPoolExecutor\nimport torch\n\n"
                 "def setup(device):\n    with ThreadPoolExecutor(1) as pool:\n"
                 "        table = pool.submit(torch.linspace, 0.5, 1.5, 4).result()\n"
                 "    return {'table': table, 'host': torch.ones(3), 'dev': torch.ones(3, device=device)}\n\n"
                 "def inputs(i, device):\n    return {'x': torch.ones(4, device=device)}\n\n"
                 "def step(table, host, dev, x):\n"
                 "    a = table.max().item()\n"       # line 13: warning (table alone)
                 "    b = (table * 2)[table > 1]\n"   # line 14: warning (mask index on table alone)
                 "    c = (table + x).sum().item()\n"  # line 15: error (x is a device tensor)
                 "    d = host.sum().item()\n"        # line 16: a host tensor's read: nothing
                 "    e = dev.sum().item()\n"         # line 17: error
                 "    return x * (a + c + d + e), b\n")
    _, findings, errors = analyze_on_cpu(load_script(str(p)))
    assert not errors
    got = sorted((f.line, f.rule, f.severity) for f in findings if f.rule.startswith("CG10"))
    assert got == [(13, "CG101", "warning"), (14, "CG102", "warning"), (15, "CG101", "error"), (17, "CG101", "error")]
    warned = next(f for f in findings if f.line == 13)
    assert "`table`" in warned.message and "cannot tell" in warned.message


@pytest.mark.parametrize("path", RANKED, ids=lambda p: os.path.relpath(p, ROOT))
def test_a_multi_hazard_script_for_ranks_as_a_world_of_one(path):
    """`cgtool lint --cpu` runs it as one rank: every marker at its line, no other error."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "cgtool", "lint", path, "--cpu", "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    s = json.loads(r.stdout)["scripts"][0]
    assert s["errors"] == [], s["errors"]
    errors = {(os.path.abspath(f["file"]), f["line"], f["rule"]) for f in s["findings"] if f["severity"] == "error"}
    assert errors == set(expectations(path)), errors
