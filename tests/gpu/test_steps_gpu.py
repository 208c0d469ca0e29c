"""Issue 36 on the GPU: graphs that stay right for a whole run, each beside plain PyTorch (no cgtool).

- A static-cache decode (samples/decode/llama_static_cache.py): captured, replay equal to eager over 50 tokens
  (`--check-steps 50`), timed without the device-side assert its counter used to raise; plain PyTorch's greedy
  tokens and speedup beside it (tests/gpu/decode_truth.py).
- Two whole-step training samples compared over K steps from identical state, beside plain PyTorch's K-step
  comparison of the same graph (tests/gpu/steps_truth.py).
- The module map's ResNet-18 plan (bf16 autocast, SGD momentum, channels_last): its check over K steps, and its
  modules-plan.py pasted and run 50 steps beside eager (tests/gpu/modules_truth.py --steps 50).
- Memory as users pay it: cgtool's pool and the documented recipe's (its own capture stream), each beside plain
  PyTorch's allocator snapshot (tests/gpu/memory_truth.py pool / recipe), four models.
Tables in $OUT/issue36-tables.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from gpu.runs import WORK, cgtool_run, read_json, save_artifact

pytestmark = pytest.mark.gpu
MiB = 2**20
DECODE = "samples/decode/llama_static_cache.py"
TRAINING = ["samples/transformer_train.py", "tests/realworld/clean/tv_resnet18_train.py"]
PLAN_SAMPLE = "samples/modules/resnet_autocast_train.py"
MODELS = ["samples/mlp_inference.py", "tests/realworld/clean/hf_gpt2_train.py",
          "tests/realworld/clean/hf_llama_infer.py", "tests/realworld/clean/hf_bert_padded_infer.py"]


def truth(script: str, *args: str, timeout: float = 300) -> dict:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", script), *args], capture_output=True,
                       text=True, cwd=ROOT, timeout=timeout)
    save_artifact("issue36-truth.txt", f"== {script} {args}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith(("TRUTH ", "{"))), None)
    assert line, (r.stdout + r.stderr)[-3000:]
    return json.loads(line[6:] if line.startswith("TRUTH ") else line)


def row(title: str, header: list[str], cells: list[object]) -> None:
    out = os.environ.get("OUT")
    if not out:
        return
    path = os.path.join(out, "issue36-tables.md")
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    with open(path, "a", encoding="utf-8") as fh:
        if f"### {title}" not in text:
            fh.write(f"\n### {title}\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
        fh.write("| " + " | ".join(str(c) for c in cells) + " |\n")


def capture_json(script: str, *args: str, timeout: float = 400) -> tuple[subprocess.CompletedProcess, dict]:
    out = os.path.join(WORK, "issue36", os.path.splitext(os.path.basename(script))[0] + "".join(args).replace("-", ""))
    r = cgtool_run("capture", script, "--out", out, "--no-node-lines", *args, timeout=timeout)
    save_artifact("issue36-cgtool.txt", f"== {script} {args} rc={r.returncode}\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
    return r, read_json(os.path.join(out, "report.json")) or {}


def test_static_cache_decode_replays_50_tokens_and_is_timed(measured):
    r, rep = capture_json(DECODE, "--check-steps", "50")
    assert "device-side assert" not in r.stdout + r.stderr, r.stderr[-3000:]
    assert r.returncode == 0 and rep.get("status") == "captured", (r.stdout + r.stderr)[-3000:]
    replay, t = rep["replay"], rep["timings"]
    assert (replay["status"], replay["steps"], replay["first_differing_step"]) == ("match", 50, None), replay["note"]
    assert any("cumulative_length" in c for c in replay["counters"])
    assert "at most 50 calls" in t["method"]
    real = truth("decode_truth.py", DECODE, "50")
    assert real["equal"], real
    row("Static-cache decode: cgtool against plain PyTorch", ["", "replay equals eager", "eager µs/token",
        "replay µs/token", "speedup"], ["cgtool capture --check-steps 50", f"{replay['steps']} steps, match",
                                        f"{t['eager_us']:.0f}", f"{t['replay_us']:.0f}", f"{t['speedup']:.2f}×"])
    row("Static-cache decode: cgtool against plain PyTorch", [], [
        "plain PyTorch (50 greedy tokens)", f"tokens equal: {real['equal']}", f"{real['eager_us']:.0f}",
        f"{real['replay_us']:.0f}", f"{real['speedup']:.2f}×"])
    measured("static-cache decode", cgtool_speedup=t["speedup"], truth_speedup=real["speedup"], tokens_equal=real["equal"])
    assert t["speedup"] > 1 and real["speedup"] > 1


@pytest.mark.parametrize("script", TRAINING, ids=os.path.basename)
def test_training_step_over_k_steps_beside_plain_pytorch(script, measured):
    r, rep = capture_json(script, "--check-steps", "6", "--no-timing")
    assert rep.get("status") == "captured", (r.stdout + r.stderr)[-3000:]
    replay = rep["replay"]
    real = truth("steps_truth.py", script, "6")
    row("Whole-step training over 6 steps from identical state", ["script", "cgtool", "first differing step",
        "plain PyTorch", "its first differing step", "plain max abs (eager vs eager)"],
        [os.path.basename(script), replay["status"], replay["first_differing_step"], "match" if real["match"]
         else "mismatch", real["first_differing_step"], f"{real['max_abs']:.3g} ({real['eager_vs_eager_max_abs']:.3g})"])
    measured(f"{script} over 6 steps", cgtool=replay["status"], truth=real)
    assert replay["steps"] == 6
    assert (replay["status"] == "match") == real["match"], (replay["note"], real)


def test_resnet_plan_checked_over_k_steps_and_pasted_for_50(measured):
    out = os.path.join(WORK, "issue36", "resnet_modules")
    r = cgtool_run("capture", PLAN_SAMPLE, "--modules", "1", "--out", out, "--no-node-lines", timeout=500)
    save_artifact("issue36-cgtool.txt", f"== {PLAN_SAMPLE} --modules 1 rc={r.returncode}\n{r.stdout[-4000:]}{r.stderr[-3000:]}")
    rep = read_json(os.path.join(out, "report.json")) or {}
    m = rep.get("modules") or {}
    replay = m.get("replay") or {}
    assert (replay.get("status"), replay.get("steps")) == ("match", 6), (r.stdout + r.stderr)[-3000:]
    plan = os.path.join(out, "modules-plan.py")
    with open(plan, encoding="utf-8") as fh:
        text = fh.read()
    save_artifact("issue36-plan.py", text)
    assert "over 6 consecutive steps" in text.splitlines()[0]
    real = truth("modules_truth.py", os.path.join(ROOT, PLAN_SAMPLE), "--plan", plan, "--steps", "50", timeout=400)
    row("ResNet-18 module plan (bf16 autocast, SGD momentum, channels_last)", ["", "steps", "match",
        "first differing step", "max abs", "speedup"], ["cgtool's check of the set", replay["steps"], replay["status"],
                                                        replay.get("first_differing_step"), f"{replay['max_abs']:.3g}",
                                                        f"{(m.get('timings') or {}).get('speedup', 0):.2f}×"])
    row("ResNet-18 module plan (bf16 autocast, SGD momentum, channels_last)", [], [
        "modules-plan.py pasted, plain PyTorch", real["steps"], real["match"], real["first_differing_step"],
        f"{real['max_abs']:.3g}", f"{real['speedup']:.2f}×"])
    measured("resnet plan 50 steps", truth=real)
    assert real["match"] and real["steps"] == 50, real


@pytest.mark.parametrize("script", MODELS, ids=os.path.basename)
def test_pool_and_recipe_pool_beside_plain_pytorch(script, measured):
    r, rep = capture_json(script, "--no-checks", "--no-replay-check", "--no-timing")
    mem = rep.get("memory") or {}
    assert mem.get("recipe_pool_reserved") is not None, (r.stdout + r.stderr)[-3000:]
    pool, recipe = truth("memory_truth.py", "pool", script), truth("memory_truth.py", "recipe", script)
    ours, theirs = mem["pool_reserved"], mem["recipe_pool_reserved"]
    row("Pool as cgtool captures and as the documented recipe captures, beside plain PyTorch", [
        "script", "cgtool pool", "plain (warmup stream)", "cgtool: recipe's pool", "plain recipe",
        "recipe's extra", "plain recipe's largest live blocks"],
        [os.path.basename(script), f"{ours / MiB:.1f} MiB", f"{pool['pool_reserved'] / MiB:.1f} MiB",
         f"{theirs / MiB:.1f} MiB", f"{recipe['pool_reserved'] / MiB:.1f} MiB", f"{(theirs - ours) / MiB:+.1f} MiB",
         ", ".join(f"{b / MiB:.1f}" for b in recipe["largest_live_blocks"][:3]) + " MiB"])
    measured(f"{script} pools", cgtool=ours, cgtool_recipe=theirs, truth=pool, truth_recipe=recipe)
    assert abs(ours / pool["pool_reserved"] - 1) <= 0.05
    assert abs(theirs / recipe["pool_reserved"] - 1) <= 0.05
