"""Issue 37 on the GPU: `capture` writes timeline.json (docs/node-lines.md, "Timeline"), the profiled replays and
eager step as a Chrome trace in which every kernel is named by its graph node, line and module; and cgtool.check /
assert_capturable capture and check replay where a GPU is present. The timelines and reports are kept in $OUT
(timeline-<name>.json: open them in ui.perfetto.dev or chrome://tracing)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import ROOT
from gpu.runs import WORK, cgtool_run, read_json, save_artifact

pytestmark = pytest.mark.gpu
SCRIPTS = {"mlp": ("samples/mlp_inference.py", "mlp_inference.py", " · 0 · "),  # the Sequential is the root: its layers are 0, 1, ...
           "llama": ("tests/realworld/clean/hf_llama_infer.py", "modeling_llama.py", "self_attn")}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_capture_writes_a_timeline_with_every_kernel_named_by_node_line_and_module(name, measured):
    script, file, module = SCRIPTS[name]
    out = os.path.join(WORK, f"timeline-{name}")
    r = cgtool_run("capture", script, "--out", out, "--no-timing", timeout=600)
    report = read_json(os.path.join(out, "report.json"))
    assert report is not None and report["status"] == "captured", r.stdout[-3000:] + r.stderr[-3000:]
    assert report["outputs"].get("timeline.json") == os.path.join(out, "timeline.json")
    with open(os.path.join(out, "timeline.json"), encoding="utf-8") as fh:
        trace = json.load(fh)
    if os.environ.get("OUT"):
        shutil.copy(os.path.join(out, "timeline.json"), os.path.join(os.environ["OUT"], f"timeline-{name}.json"))
        shutil.copy(os.path.join(out, "report.json"), os.path.join(os.environ["OUT"], f"timeline-{name}.report.json"))
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    replays = report["node_lines"]["replays"]
    kernels = sum(1 for n in report["graph"]["nodes"] if n["kind"] == "kernel")
    replayed = [e for e in slices if e["pid"] == 1 and e["cat"] == "kernel"]
    # every kernel of every profiled replay is there, tied to a node of the graph
    assert len(replayed) == replays * kernels, (len(replayed), replays, kernels)
    unmatched = [e["name"] for e in replayed if "node" not in e["args"]]
    assert not unmatched, unmatched[:5]
    assert all(e["name"].startswith(f"node {e['args']['node']} · ") for e in replayed)
    named = [e for e in replayed if "line" in e["args"]
             and f" · {os.path.basename(e['args']['line'])}" in e["name"]]  # the user's line, as file.py:N
    assert any(file in e["name"] for e in named)  # the sample's own line; in llama, transformers' line too
    with_module = [e for e in replayed if e["args"].get("module") and e["args"]["module"] in e["name"]]
    assert len(named) >= 0.95 * len(replayed), [e["name"] for e in replayed if e not in named][:5]
    assert len(with_module) >= 0.9 * len(replayed) and any(module in e["name"] for e in with_module)
    launches = [e for e in slices if e["pid"] == 1 and e["cat"] in ("cuda_runtime", "cuda_driver")]
    assert len(launches) == replays
    for i, launch in enumerate(sorted(launches, key=lambda e: e["ts"])):  # a replay's kernels run after its launch
        mine = [e for e in replayed if e["args"]["replay"] == i + 1]
        assert mine and min(e["ts"] for e in mine) >= launch["ts"]
    eager = [e for e in slices if e["pid"] == 2]
    assert any(e["cat"] == "kernel" and e["name"].startswith("node ") for e in eager)
    assert any(e["cat"] == "cpu_op" for e in eager)
    busy = sum(e["dur"] for e in replayed) / replays
    measured(f"{script}: {len(replayed)} kernel slices over {replays} replays, {len(named)} named by line",
             kernels=kernels, busy_us_per_replay=round(busy, 1), replay_us=report["node_lines"]["replay_us"],
             eager_slices=len(eager), first=replayed[0]["name"])
    save_artifact("timeline-names.txt", f"{name}: " + "\n  ".join(sorted({e["name"] for e in replayed})[:40]))


def test_check_captures_and_checks_replay_on_the_gpu(measured):
    import cgtool

    clean = cgtool.check(os.path.join(ROOT, "samples", "mlp_inference.py"))
    assert clean.passed and clean.device == "cuda" and clean.status == "captured", clean.text()
    assert clean.report.replay is not None and clean.report.replay.status == "match"
    hazard = cgtool.check(os.path.join(ROOT, "samples", "hazards", "item_sync.py"))
    assert not hazard.passed and hazard.device == "cuda" and hazard.status == "capture-failed", hazard.text()
    assert any(f.rule == "CG101" and f.line == 30 for f in hazard.findings), hazard.text()
    measured("cgtool.check on the GPU", clean=clean.status, hazard=hazard.status,
             hazard_rules=sorted({f.rule for f in hazard.findings}))


def test_assert_capturable_fails_with_the_capture_confirmed_finding():
    from cgtool.testing import NotCapturable, assert_capturable

    with pytest.raises(NotCapturable) as err:
        assert_capturable(os.path.join(ROOT, "samples", "hazards", "item_sync.py"))
    message = str(err.value)
    assert "item_sync.py:30: error: CG101" in message and "checked on cuda" in message, message
    save_artifact("assert-capturable-gpu.txt", message)
