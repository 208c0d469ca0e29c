"""Module-map verdicts on the GPU (issue 26), about 4 minutes: `cgtool capture --modules` of the samples in
samples/modules/ (an inference model with an un-graphable router and a host-state counter, a torchvision ResNet-18
training step under bf16 autocast, a transformers Llama training step whose model cannot be graphed whole (a
host-side guard inside it) so its decoder layers, called with keyword arguments, graph on their own, a module that
updates its input in place),
each set beside plain PyTorch's answer for the same set (tests/gpu/modules_truth.py: graphed from a deep copy of the
same state, no cgtool); and cgtool's pasted plan (modules-plan.py) applied to three samples as plain PyTorch scripts.
Tables in $OUT/issue26-tables.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from gpu.runs import read_json, save_artifact

pytestmark = pytest.mark.gpu
TRUTH = os.path.join(ROOT, "tests", "gpu", "modules_truth.py")
SAMPLES = {  # sample: (depth, what the map must say)
    "router_counter": "1",
    "resnet_autocast_train": "1",
    "llama_train": "2",
    "inplace_input": "1",
}
_maps: dict[str, dict] = {}


def _table(line: str, header: str) -> None:
    out = os.environ.get("OUT")
    if not out:
        return
    path = os.path.join(out, "issue26-tables.md")
    new = not os.path.exists(path)
    with open(path, "a", encoding="utf-8") as fh:
        if new:
            fh.write("# issue 26: module-map verdicts vs plain PyTorch\n\n")
        if header and header not in (open(path, encoding="utf-8").read() if not new else ""):
            fh.write("\n" + header + "\n")
        fh.write(line + "\n")


def truth(sample: str, *args: str) -> dict:
    r = subprocess.run([sys.executable, TRUTH, os.path.join(ROOT, "samples", "modules", sample + ".py"), *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    save_artifact("issue26-truth.txt", f"== {sample} {args}\n{r.stdout[-3000:]}{r.stderr[-4000:]}")
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("TRUTH ")), None)
    assert line, r.stderr[-3000:]
    return json.loads(line[6:])


def _arg(node: dict) -> str:
    """A recorded argument (model/partial.py CallSpec node), short: `tensor[4, 1, 64, 64] bool`, `None`, `(…, …)`."""
    if "tensor" in node:
        return f"tensor{node['tensor'][0]} {node['tensor'][1]}"
    if "seq" in node:
        return "(" + ", ".join(_arg(n) for n in node["items"]) + ")"
    return str(node.get("value", "…"))


def module_map(sample: str, cgtool, work) -> tuple[dict, str]:  # noqa: ANN001
    out = os.path.join(work, "capture", "issue26_" + sample)
    if sample not in _maps:
        r = cgtool("capture", f"samples/modules/{sample}.py", "--modules", SAMPLES[sample], "--out", out,
                   "--timeout", "240", timeout=300)
        save_artifact("issue26-maps.txt", f"== capture samples/modules/{sample}.py --modules {SAMPLES[sample]} "
                                          f"exit {r.returncode}\n{r.stdout[-8000:]}\n{r.stderr[-3000:]}")
        _maps[sample] = (read_json(os.path.join(out, "report.json")) or {}).get("modules") or {}
        save_artifact(f"issue26-map-{sample}.json", json.dumps(_maps[sample], indent=1))
    return _maps[sample], out


HEADER = ("| sample | cgtool: map | recommended set | cgtool replay vs eager | cgtool speedup | plain PyTorch, same set:"
          " match / max abs / speedup |\n|---|---|---|---|---|---|")


@pytest.mark.parametrize("sample", list(SAMPLES))
def test_module_map_beside_plain_pytorch(sample, cgtool, work, measured):
    m, _ = module_map(sample, cgtool, work)
    assert m, "no module map in report.json"
    status = {e["path"]: e["status"] for e in m["modules"]}
    graphed, replay, t = m.get("graphed", []), m.get("replay") or {}, m.get("timings") or {}
    plain = truth(sample, "--set", ",".join(graphed)) if graphed else {}
    brief = ", ".join(f"{p} {s}" for p, s in status.items() if s not in ("skipped", "not-called"))
    _table(f"| {sample} | {brief} | {', '.join(graphed)} | {replay.get('status')} (max abs {replay.get('max_abs', 0):.3g})"
           f" | {t.get('speedup', 0):.2f}× | {plain.get('match')} / {plain.get('max_abs', 0):.3g} / "
           f"{plain.get('speedup', 0):.2f}× |", HEADER)
    measured(f"{sample}: graphed {graphed}; replay {replay.get('status')}; speedup {t.get('speedup')}; plain {plain}; "
             f"map {status}")
    assert m["status"] == "measured" and graphed and replay.get("status") == "match"
    # the speedup is measured and reported beside plain PyTorch's for the same set (issue26-tables.md); no bar on
    # it here: with a `nonzero` router left eager the set gains little, and on a loaded machine 0.93x against
    # plain PyTorch's 1.07x in the same run (callC1) is noise, not a wrong verdict
    assert t.get("speedup", 0) > 0 and t.get("eager_us", 0) > 0 and t.get("replay_us", 0) > 0
    assert plain["match"], plain
    if sample == "router_counter":
        assert status["model.router"] == "fails" and status["model.counter"] == "fails"
        assert set(graphed) == {"model.embed", "model.head"} | {f"model.blocks.{i}" for i in range(4)}
    if sample == "resnet_autocast_train":
        assert graphed == ["model"]
        call = next(e["call"] for e in m["modules"] if e["path"] == "model")
        assert call["autocast"] == "bfloat16" and call["args"][0]["tensor"][3]  # channels_last input
    if sample == "llama_train":  # the guard's sync keeps model and model.model whole out; their parts graph
        assert status["model"] == "fails" and status["model.model"] == "fails", status
        assert not [e for e in m["modules"] if e["status"] == "fails" and "not captured on the GPU" in e["reason"]
                    and ".layers." in e["path"]]
        parts = ["model.model.embed_tokens", "model.model.norm", "model.lm_head"] + [
            f"model.model.layers.{i}" for i in range(4)]
        assert set(parts) <= set(graphed), (graphed, status)
        layer = next(e for e in m["modules"] if e["path"] == "model.model.layers.0")
        kwargs = (layer.get("call") or {}).get("kwargs") or {}
        _table(f"| {sample} | model.model.layers.0: {layer['status']} | "
               f"{', '.join(f'{k}={_arg(v)}' for k, v in kwargs.items())} |",
               "| sample | decoder layer | its keyword arguments as graphed (tensors: graph inputs; the rest fixed) |"
               "\n|---|---|---|")
        assert layer["call"]["backward"] and "attention_mask" in kwargs  # graphed forward and backward, with kwargs
        assert "tensor" in kwargs["attention_mask"]  # the padding mask: a graph input
    if sample == "inplace_input":
        mixer = next(e for e in m["modules"] if e["path"] == "mixer")
        assert mixer["status"] == "diverges" and "in place" in mixer["reason"]
        assert set(graphed) == {"embed", "body", "head", "mixer.lin"} and "mixer" in m["tried"]  # lin in its place
        everything = truth(sample, "--set", ",".join(p for p in m["tried"] if p != "mixer.lin"))  # plain PyTorch shows the difference too
        _table(f"| {sample}, all {len(m['tried'])} graphed | mixer {mixer['status']} | {', '.join(m['tried'])} | "
               f"{(m.get('tried_replay') or {}).get('status')} | – | {everything['match']} / "
               f"{everything['max_abs']:.3g} / {everything['speedup']:.2f}× |", HEADER)
        assert not everything["match"]


@pytest.mark.parametrize("sample", ["resnet_autocast_train", "router_counter", "llama_train"])
def test_pasted_plan_as_a_plain_pytorch_script(sample, cgtool, work, measured):
    m, out = module_map(sample, cgtool, work)
    plan = os.path.join(out, "modules-plan.py")
    assert os.path.exists(plan), f"no modules-plan.py; map graphed {m.get('graphed')}"
    with open(plan, encoding="utf-8") as fh:
        save_artifact("issue26-plans.txt", f"== {sample}\n{fh.read()}")
    applied = truth(sample, "--plan", plan)
    cg = (m.get("timings") or {}).get("speedup", 0)
    _table(f"| {sample} | {', '.join(m.get('graphed', []))} | {applied['match']} | {applied['max_abs']:.3g} | "
           f"{applied['speedup']:.2f}× | {cg:.2f}× |",
           "| sample (plan pasted, plain PyTorch script) | set | match vs eager | max abs | speedup | cgtool's "
           "measured speedup |\n|---|---|---|---|---|---|")
    measured(f"{sample} plan applied: {applied}")
    assert applied["match"] and applied["speedup"] > 1.0
