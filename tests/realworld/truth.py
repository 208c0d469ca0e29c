"""Ground truth for the corpus, in plain PyTorch (no cgtool): can each script's step be captured as a
CUDA graph, and does replay compute what eager does?

    python truth.py                       # clean/*.py and hazards/*.py next to this file
    python truth.py hazards/x.py --warmup 5 --timeout 300

One JSON line with the library versions, then one JSON line per script:
    {"script", "kind": clean|hazard, "expect": [[line, rule], ...], "capture": ok|failed|not-run,
     "phase": where it stopped, "error", "replay_match": bool|null, "max_abs_err", "mismatches": [...], ...}

Each script runs in its own subprocess (a failed capture can leave the CUDA context unusable).
In the child, for one script:
1. setup(device=cuda) once.
2. Warmup: `--warmup` iterations step(state, inputs(i)) on a side stream, as in the PyTorch docs.
3. Capture: inputs(N) become the static input buffers; one call of step is captured with
   torch.cuda.graph (its return value is the static output).
4. Replay check from one starting state: the state tensors (module parameters and buffers, optimizer
   state, any tensor reachable from setup's values) and the CUDA RNG state are snapshotted; the fresh
   inputs(N+1) are copied into the static buffers and the graph replays (outputs and state recorded);
   the snapshot is restored with copy_ and the RNG state reset; step runs eagerly on inputs(N+1)
   (outputs and state recorded). Outputs and every state tensor are compared with cgtool's dtype
   tolerances (gradients are not compared: every step recomputes them). Only tensor *values* are
   restored: Python-side state that a step mutates (a list, a counter, a cache object that swaps in a
   longer tensor) is not, and shows up as a mismatch, which is itself the finding.
5. Timing: median ms of eager step vs graph.replay() on the static inputs (after the check).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
MARKER = re.compile(r"#\s*expect:\s*(CG\d{3}(?:[\s,]+CG\d{3})*)")
TOL = {"float64": (1e-7, 1e-7), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2)}


# ---------------------------------------------------------------------------------------------- parent
def versions() -> dict:
    out = {"python": sys.version.split()[0]}
    for name in ("torch", "torchvision", "transformers", "timm", "numpy"):
        try:
            out[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001
            out[name] = f"unavailable ({type(e).__name__})"
    try:
        import torch
        out["cuda"] = torch.version.cuda
        out["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        out["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception as e:  # noqa: BLE001
        out["gpu"] = f"unavailable ({type(e).__name__})"
    return out


def expectations(path: str) -> list[list]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, text in enumerate(fh, 1):
            m = MARKER.search(text)
            if m:
                out += [[n, r] for r in re.findall(r"CG\d{3}", m.group(1))]
    return out


def run_parent(args) -> int:
    scripts = args.scripts or (sorted(glob.glob(os.path.join(HERE, "clean", "*.py")))
                               + sorted(glob.glob(os.path.join(HERE, "hazards", "*.py"))))
    print(json.dumps({"versions": versions()}), flush=True)
    for path in scripts:
        path = os.path.abspath(path)
        base = {"script": os.path.relpath(path, HERE), "kind": "hazard" if "hazard" in path else "clean",
                "expect": expectations(path)}
        cmd = [sys.executable, os.path.abspath(__file__), "--child", path, "--warmup", str(args.warmup)]
        if args.no_time:
            cmd.append("--no-time")
        if args.emulate_on_cpu:
            cmd.append("--emulate-on-cpu")
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            if lines:
                res = json.loads(lines[-1])
            else:
                res = {"capture": "failed", "phase": "child", "replay_match": None, "max_abs_err": None,
                       "error": f"child exited {p.returncode} without a result: {p.stderr.strip()[-1500:]}"}
        except subprocess.TimeoutExpired:
            res = {"capture": "failed", "phase": "timeout", "replay_match": None, "max_abs_err": None,
                   "error": f"child did not finish in {args.timeout} s"}
        res = {**base, **res, "wall_s": round(time.perf_counter() - t0, 1)}
        # a clean script should capture and match; a hazard should not (or its marker is unproven here)
        res["as_expected"] = None if args.emulate_on_cpu else \
            (res.get("capture") == "ok" and res.get("replay_match") is True) == (base["kind"] == "clean")
        print(json.dumps(res), flush=True)
    return 0


# ----------------------------------------------------------------------------------------------- child
def load(path: str):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def as_args(v):
    if v is None:
        return (), {}
    if isinstance(v, dict):
        return (), dict(v)
    if isinstance(v, tuple):
        return tuple(v), {}
    return (v,), {}


def tensors_in(obj, prefix: str, out: dict, seen: set, depth: int = 0) -> dict:
    """Every tensor reachable from obj: module parameters and buffers, optimizer state, containers and
    plain objects' attributes (a cache object), named by path. Each tensor is listed once."""
    import torch
    if depth > 6 or id(obj) in seen:
        return out
    if isinstance(obj, torch.Tensor):
        if id(obj) not in seen:
            seen.add(id(obj))
            out[prefix] = obj
        return out
    seen.add(id(obj))
    if isinstance(obj, torch.nn.Module):
        for n, t in list(obj.named_parameters()) + list(obj.named_buffers()):
            tensors_in(t, f"{prefix}.{n}", out, seen, depth + 1)
    elif isinstance(obj, torch.optim.Optimizer):
        names = {id(p): f"p{i}" for i, p in enumerate(p for g in obj.param_groups for p in g["params"])}
        for p, st in obj.state.items():
            for k, v in st.items():
                tensors_in(v, f"{prefix}.state[{names.get(id(p), '?')}].{k}", out, seen, depth + 1)
        for gi, g in enumerate(obj.param_groups):
            for k, v in g.items():
                if k != "params":
                    tensors_in(v, f"{prefix}.param_groups[{gi}].{k}", out, seen, depth + 1)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            tensors_in(v, f"{prefix}[{k!r}]", out, seen, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            tensors_in(v, f"{prefix}[{i}]", out, seen, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, (type, torch.device, torch.dtype)) \
            and not callable(obj) and not type(obj).__module__.startswith(("torch.cuda", "torch._C")):
        try:
            items = list(vars(obj).items())
        except TypeError:
            items = []
        for k, v in items:
            tensors_in(v, f"{prefix}.{k}", out, seen, depth + 1)
    return out


def state_tensors(sargs, skw) -> dict:
    out, seen = {}, set()
    for i, v in enumerate(sargs):
        tensors_in(v, f"state[{i}]", out, seen)
    for k, v in skw.items():
        tensors_in(v, f"state.{k}", out, seen)
    return out


def flat_outputs(obj, prefix="out", out=None) -> dict:
    import torch
    out = {} if out is None else out
    if isinstance(obj, torch.Tensor):
        out[prefix] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flat_outputs(v, f"{prefix}[{k!r}]", out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flat_outputs(v, f"{prefix}[{i}]", out)
    return out


def snapshot(d: dict) -> dict:
    return {k: v.detach().clone() for k, v in d.items()}


def compare(a: dict, b: dict, what: str, noise: dict | None = None) -> tuple[float, list[str]]:
    """max |a-b| over float tensors, and the names that differ beyond tolerance (or in shape/presence).
    A float tensor within 4x of `noise[k]` (the rounding slack: how far two eager runs from the same state
    differ through nondeterministic kernels such as atomics in backward; see slack()) counts as equal too."""
    import torch
    worst, bad = 0.0, []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            bad.append(f"{what} {k}: only in {'replay' if k in a else 'eager'}")
            continue
        x, y = a[k], b[k]
        if x.shape != y.shape or x.dtype != y.dtype:
            bad.append(f"{what} {k}: replay {tuple(x.shape)} {x.dtype} vs eager {tuple(y.shape)} {y.dtype}")
            continue
        if x.numel() == 0:
            continue
        if x.is_floating_point() or x.is_complex():
            d = (x.double() - y.double()).abs()
            nan_same = torch.isnan(x) & torch.isnan(y)
            d = torch.where(nan_same, torch.zeros_like(d), d)
            err = float(d.max())
            worst = max(worst, err if err == err else float("inf"))
            rtol, atol = TOL.get(str(x.dtype).replace("torch.", ""), (1e-4, 1e-5))
            floor = (noise or {}).get(k, 0.0)
            if not torch.allclose(x.double(), y.double(), rtol=rtol, atol=atol, equal_nan=True) and \
                    not (floor > 0 and err <= 4 * floor):
                bad.append(f"{what} {k}: max abs err {err:.3g} (eager vs eager {floor:.3g})")
        elif not torch.equal(x, y):
            n = int((x != y).sum())
            worst = max(worst, float((x.double() - y.double()).abs().max()))
            bad.append(f"{what} {k}: {n} of {x.numel()} elements differ")
    return worst, bad


def slack(first: dict, again: dict, before: dict, limit: float) -> dict:
    """Per float tensor, how far two eager runs from one state differ, where that is rounding: at most `limit`
    times how far the step moved the tensor from `before` (outputs: from zero). A larger difference comes from
    state the snapshot does not restore (a Python counter, a cache object) and earns no slack."""
    out = {}
    for k, v in first.items():
        w, b = again.get(k), before.get(k)
        if w is None or b is None or v.shape != w.shape or v.shape != b.shape or not v.is_floating_point() or not v.numel():
            continue
        noise = float((v.double() - w.double()).abs().max())
        moved = float((v.double() - b.double()).abs().max())
        if 0 < noise <= limit * moved:
            out[k] = noise
    return out


def copy_inputs(static_a, static_k, new_a, new_k) -> list[str]:
    """Copy the fresh inputs into the static buffers; return what could not be (the graph cannot see it)."""
    import torch
    problems = []
    pairs = [(f"input[{i}]", s, n) for i, (s, n) in enumerate(zip(static_a, new_a))] + \
            [(f"input.{k}", static_k[k], new_k.get(k)) for k in static_k]

    def rec(name, s, n):
        if isinstance(s, torch.Tensor):
            if not isinstance(n, torch.Tensor):
                problems.append(f"{name}: tensor at capture, {type(n).__name__} now")
            elif s.shape != n.shape:
                problems.append(f"{name}: shape {tuple(s.shape)} at capture, {tuple(n.shape)} now")
            else:
                s.copy_(n)
        elif isinstance(s, (list, tuple)) and isinstance(n, (list, tuple)) and len(s) == len(n):
            for i, (x, y) in enumerate(zip(s, n)):
                rec(f"{name}[{i}]", x, y)
        elif isinstance(s, dict) and isinstance(n, dict):
            for k in s:
                rec(f"{name}[{k!r}]", s[k], n.get(k))
        elif s != n:
            problems.append(f"{name}: Python value {s!r} at capture, {n!r} now (replay keeps the captured one)")
    for name, s, n in pairs:
        rec(name, s, n)
    if len(new_a) != len(static_a) or set(new_k) != set(static_k):
        problems.append("inputs(): a different set of arguments than at capture")
    return problems


def err_text(e: BaseException) -> str:
    msg = f"{type(e).__name__}: {str(e).strip()}"
    ctx = e.__context__ or e.__cause__
    if ctx is not None and str(ctx) not in msg:
        msg += f" (while handling {type(ctx).__name__}: {str(ctx).strip()[:400]})"
    return msg[:1500]


def where(e: BaseException, script: str) -> str | None:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) == script]
    lib = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    s = f"{os.path.basename(script)}:{frames[-1].lineno}" if frames else None
    if lib is not None:
        s = f"{s} -> {lib.filename.split('site-packages/')[-1]}:{lib.lineno}" if s else \
            f"{lib.filename.split('site-packages/')[-1]}:{lib.lineno}"
    return s


def median_ms(fn, n: int, stream) -> float:
    import torch
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        fn()
        b.record(stream)
        b.synchronize()
        times.append(a.elapsed_time(b))
    return round(sorted(times)[len(times) // 2], 4)


class EagerStandIn:
    """--emulate-on-cpu: a 'graph' whose replay reruns step on the static buffers (a perfect graph), so
    the harness itself (state walk, snapshot/restore, input copy, comparison) can be checked on a CPU."""

    def __init__(self, fn):
        self.fn = fn

    def replay(self):
        return self.fn()


def run_child(path: str, warmup: int, do_time: bool, emulate: bool = False) -> dict:
    import torch
    res = {"capture": "not-run", "phase": "load", "error": None, "replay_match": None, "max_abs_err": None}
    if emulate:
        dev = torch.device("cpu")
        res["gpu"] = "none (--emulate-on-cpu: replay = eager step on the static buffers)"
        get_rng, set_rng, sync = torch.get_rng_state, torch.set_rng_state, (lambda: None)
    elif not torch.cuda.is_available():
        res["error"] = "no CUDA device"
        return res
    else:
        dev = torch.device("cuda")
        res["gpu"] = torch.cuda.get_device_name(0)
        get_rng, set_rng, sync = torch.cuda.get_rng_state, torch.cuda.set_rng_state, torch.cuda.synchronize
    try:
        mod = load(path)
        res["phase"] = "setup"
        sa, sk = as_args(mod.setup(dev)) if hasattr(mod, "setup") else ((), {})
        get_inputs = (lambda i: as_args(mod.inputs(i, dev))) if hasattr(mod, "inputs") else (lambda i: ((), {}))
        step = mod.step

        res["phase"] = "warmup"
        if emulate:
            for i in range(warmup):
                ia, ik = get_inputs(i)
                step(*sa, *ia, **sk, **ik)
        else:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for i in range(warmup):
                    ia, ik = get_inputs(i)
                    step(*sa, *ia, **sk, **ik)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        res.update(error=err_text(e), at=where(e, path))
        return res

    res["phase"] = "capture"
    static_a, static_k = get_inputs(warmup)
    try:
        if emulate:
            static_out = step(*sa, *static_a, **sk, **static_k)
            graph = EagerStandIn(lambda: step(*sa, *static_a, **sk, **static_k))
        else:
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = step(*sa, *static_a, **sk, **static_k)
    except Exception as e:  # noqa: BLE001
        res.update(capture="failed", error=err_text(e), at=where(e, path))
        return res
    res["capture"] = "ok"
    sync()

    res["phase"] = "replay-check"
    try:
        new_a, new_k = get_inputs(warmup + 1)
        state0 = state_tensors(sa, sk)
        snap = snapshot(state0)
        rng = get_rng()
        res["n_state_tensors"] = len(state0)

        with torch.no_grad():
            problems = copy_inputs(static_a, static_k, new_a, new_k)
        replayed = graph.replay()
        sync()
        out_replay = snapshot(flat_outputs(replayed if emulate else static_out))
        state_replay = snapshot(state_tensors(sa, sk))

        with torch.no_grad():
            for k, t in state0.items():
                t.copy_(snap[k])
        set_rng(rng)
        sync()
        out_eager = snapshot(flat_outputs(step(*sa, *new_a, **sk, **new_k)))
        sync()
        state_eager = snapshot(state_tensors(sa, sk))
        # eager once more from the same state: how much eager itself varies (nondeterministic kernels)
        with torch.no_grad():
            for k, t in state0.items():
                t.copy_(snap[k])
        set_rng(rng)
        sync()
        out_again = snapshot(flat_outputs(step(*sa, *new_a, **sk, **new_k)))
        sync()
        state_again = snapshot(state_tensors(sa, sk))
        noise_out = slack(out_eager, out_again, {k: torch.zeros_like(v) for k, v in out_eager.items()}, 1e-3)
        noise_state = slack(state_eager, state_again, snap, 0.1)
        res["eager_noise"] = max([0.0, *noise_out.values(), *noise_state.values()])

        e1, bad1 = compare(out_replay, out_eager, "output", noise_out)
        e2, bad2 = compare(state_replay, state_eager, "state", noise_state)
        res["n_outputs"] = len(out_replay)
        res["max_abs_err"] = max(e1, e2)
        res["mismatches"] = (problems + bad1 + bad2)[:12]
        res["n_mismatches"] = len(problems) + len(bad1) + len(bad2)
        res["replay_match"] = not (problems or bad1 or bad2)
        if not out_replay:
            res["mismatches"].append("note: the step returned no tensor")
    except Exception as e:  # noqa: BLE001
        res.update(error=err_text(e), at=where(e, path))
        return res

    if do_time and not emulate:
        res["phase"] = "timing"
        try:
            stream = torch.cuda.current_stream()
            res["replay_ms"] = median_ms(graph.replay, 20, stream)
            res["eager_ms"] = median_ms(lambda: step(*sa, *static_a, **sk, **static_k), 20, stream)
        except Exception as e:  # noqa: BLE001
            res["timing_error"] = err_text(e)
    res["phase"] = "done"
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scripts", nargs="*", help="scripts (default: clean/*.py hazards/*.py beside this file)")
    ap.add_argument("--warmup", type=int, default=3, help="warmup iterations on a side stream (3-11)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per script")
    ap.add_argument("--no-time", action="store_true", help="skip the eager/replay timing")
    ap.add_argument("--emulate-on-cpu", action="store_true",
                    help="check the harness on a CPU: no capture, replay = eager step on the static buffers")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        path = os.path.abspath(args.child)
        try:
            res = run_child(path, args.warmup, not args.no_time, args.emulate_on_cpu)
        except BaseException as e:  # noqa: BLE001
            res = {"capture": "failed", "phase": "child", "error": err_text(e), "replay_match": None,
                   "max_abs_err": None}
        print(json.dumps(res, default=str), flush=True)
        return 0
    return run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
