"""Plain PyTorch's answer for a module map (issue 26), no cgtool imported: the sample's step with a set of its
modules graphed (torch.cuda.make_graphed_callables for a training call, under the call's autocast without its cache;
a forward-only torch.cuda.graph with static inputs for a call without grad) against eager, each from a deep copy
of the same state after three eager warmup steps; outputs, parameters, buffers and optimizer state compared; both
timed in alternating blocks (each one's best block).

  python tests/gpu/modules_truth.py SAMPLE.py --set model.embed,model.head     # graph these modules
  python tests/gpu/modules_truth.py SAMPLE.py --plan OUT/modules-plan.py       # apply cgtool's pasted plan

Prints one line `TRUTH {json}`: match, the worst tensor, eager and graphed µs per step, speedup.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import time

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from truth_common import load, tensors_of

WARMUP = 3
TOL = {torch.float64: (1e-7, 1e-7), torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-3),
       torch.bfloat16: (5e-2, 1e-2)}


def as_kwargs(value):  # noqa: ANN001, ANN201
    return value if isinstance(value, dict) else dict(enumerate(value))


def run_step(mod, state, i):  # noqa: ANN001, ANN201
    inp = mod.inputs(i, torch.device("cuda")) if hasattr(mod, "inputs") else {}
    return mod.step(**state, **inp)


def record_calls(mod, state, paths):  # noqa: ANN001, ANN201
    """One eager step with hooks: each module's call (arguments, grad mode, autocast, whether its output needs grad)."""
    calls, handles = {}, []
    for path in paths:
        module = find(state, path)

        def pre(m, args, kwargs, path=path):  # noqa: ANN001, ANN202
            auto = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None
            calls[path] = {"args": args, "kwargs": kwargs, "grad": torch.is_grad_enabled(), "autocast": auto}

        def post(m, args, kwargs, out, path=path):  # noqa: ANN001, ANN202
            leaves = tree_flatten(out)[0]
            calls[path]["backward"] = calls[path]["grad"] and any(
                isinstance(o, torch.Tensor) and o.requires_grad for o in leaves)

        handles += [module.register_forward_pre_hook(pre, with_kwargs=True),
                    module.register_forward_hook(post, with_kwargs=True)]
    run_step(mod, state, WARMUP)
    for h in handles:
        h.remove()
    return calls


def find(state, path):  # noqa: ANN001, ANN201
    root, _, rest = path.partition(".")
    return state[root].get_submodule(rest) if rest else state[root]


def graph(module, call):  # noqa: ANN001, ANN201
    """Replace module.forward by a graph of this call: tensors in, everything else fixed."""
    leaves, spec = tree_flatten((tuple(call["args"]), dict(call["kwargs"])))
    slots = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    sample = tuple(leaves[i].detach().clone().requires_grad_(leaves[i].requires_grad and call["backward"])
                   for i in slots)
    eager = module.forward

    class Positional(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *ts):  # noqa: ANN002, ANN202
            full = list(leaves)
            for i, t in zip(slots, ts):
                full[i] = t
            a, k = tree_unflatten(full, spec)
            return eager(*a, **k)

    auto = (torch.autocast("cuda", dtype=call["autocast"], cache_enabled=False) if call["autocast"] is not None
            else contextlib.nullcontext())
    with auto, torch.set_grad_enabled(call["grad"]):
        if call["backward"]:
            g = torch.cuda.make_graphed_callables(Positional(), sample, allow_unused_input=True)
        else:
            static = [t.clone() for t in sample]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    Positional()(*static)
            torch.cuda.current_stream().wait_stream(side)
            cg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(cg):
                out = Positional()(*static)

            def g(*ts, cg=cg, static=static, out=out):  # noqa: ANN002, ANN202
                with torch.no_grad():
                    for d, s in zip(static, ts):
                        d.copy_(s)
                cg.replay()
                return out
    module.forward = lambda *a, **k: g(*[x for x in tree_flatten((a, k))[0] if isinstance(x, torch.Tensor)])


def compare(a, b):  # noqa: ANN001, ANN201
    """(ok, worst name, max abs error) over two {name: tensor} maps."""
    worst, ok = ("", 0.0), True
    for name, x in a.items():
        y = b.get(name)
        if y is None or x.shape != y.shape:
            return False, name, float("inf")
        x, y = x.detach(), y.detach()
        if not x.is_floating_point():
            good, err = bool(torch.equal(x, y)), float((x != y).sum())
        else:
            rtol, atol = TOL.get(x.dtype, (1e-4, 1e-5))
            good = bool(torch.allclose(x.float(), y.float(), rtol=rtol, atol=atol, equal_nan=True))
            err = float((x.float() - y.float()).abs().max()) if x.numel() else 0.0
        ok &= good
        if err > worst[1]:
            worst = (name, err)
    return ok, worst[0], worst[1]


def outputs(value):  # noqa: ANN001, ANN201
    return {f"output[{i}]": t.detach().clone() for i, t in enumerate(tree_flatten(value)[0]) if isinstance(t, torch.Tensor)}


def per_step_us(mod, states, rounds=15, steps=10):  # noqa: ANN001, ANN201
    """Wall-clock µs per step of each state, timed in alternating blocks of `steps` steps (eager, graphed, eager,
    ...) on one set of inputs made beforehand (as cgtool's timing does: making inputs on the host is not the step);
    each state's best block. Alternating and the best block keep a GPU shared with other jobs from favouring one
    side: their load comes and goes, and only adds time."""
    inp = mod.inputs(WARMUP + 2, torch.device("cuda")) if hasattr(mod, "inputs") else {}
    for state in states:
        for _ in range(3):
            mod.step(**state, **inp)
    best = [float("inf")] * len(states)
    for _ in range(rounds):
        for j, state in enumerate(states):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(steps):
                mod.step(**state, **inp)
            torch.cuda.synchronize()
            best[j] = min(best[j], (time.perf_counter() - t0) / steps * 1e6)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sample")
    ap.add_argument("--set", default="")
    ap.add_argument("--plan", default="")
    ap.add_argument("--steps", type=int, default=1, help="consecutive steps compared (the first that differs is named)")
    a = ap.parse_args()
    mod = load(a.sample)
    state = as_kwargs(mod.setup(torch.device("cuda")))
    for i in range(WARMUP):
        run_step(mod, state, i)
    torch.cuda.synchronize()
    eager_state, graphed_state = copy.deepcopy(state), copy.deepcopy(state)
    paths = [p for p in a.set.split(",") if p]
    if a.plan:
        with open(a.plan) as fh:
            exec(compile(fh.read(), a.plan, "exec"), dict(graphed_state))  # the user's paste: names from setup
    else:
        calls = record_calls(mod, copy.deepcopy(state), paths)
        before = {k: v.detach().clone() for k, v in tensors_of(graphed_state).items()}
        for p in paths:
            graph(find(graphed_state, p), calls[p])
        with torch.no_grad():  # capture's warmup calls moved running stats: put the state back
            for k, v in tensors_of(graphed_state).items():
                v.copy_(before[k])
    torch.cuda.synchronize()
    first, worst, ok = None, ("", 0.0), True
    for j in range(a.steps):  # each step from the same RNG state, on inputs(WARMUP + 1 + j)
        rng = torch.cuda.get_rng_state()
        out_e = outputs(run_step(mod, eager_state, WARMUP + 1 + j))
        torch.cuda.set_rng_state(rng)
        out_g = outputs(run_step(mod, graphed_state, WARMUP + 1 + j))
        torch.cuda.synchronize()
        ok_out, name_out, err_out = compare(out_e, out_g)
        ok_st, name_st, err_st = compare(tensors_of(eager_state), tensors_of(graphed_state))
        step_worst = (name_out, err_out) if err_out >= err_st else (name_st, err_st)
        worst = step_worst if step_worst[1] > worst[1] or (first is None and not (ok_out and ok_st)) else worst
        if not (ok_out and ok_st):
            ok, first = False, j + 1
            break
    eager_us, graphed_us = per_step_us(mod, [eager_state, graphed_state])
    print("TRUTH " + json.dumps({"sample": a.sample, "set": paths, "plan": a.plan, "match": ok, "steps": a.steps,
                                 "first_differing_step": first,
                                 "worst": worst[0], "max_abs": worst[1], "eager_us": round(eager_us, 1),
                                 "graphed_us": round(graphed_us, 1), "speedup": round(eager_us / graphed_us, 3),
                                 "torch": torch.__version__, "device": torch.cuda.get_device_name()}), flush=True)


if __name__ == "__main__":
    main()
