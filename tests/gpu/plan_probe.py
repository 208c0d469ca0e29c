"""Plain PyTorch probe (issue 36): cgtool's modules-plan.py for samples/modules/resnet_autocast_train.py, pasted,
run K steps beside eager from a deep copy of the same state, in variants that test why it diverges at step 3.

  python tests/gpu/plan_probe.py VARIANT [K]
Variants, joined with +: plan (as written), fresh (pasted right after setup, not after 3 eager steps), sync (synchronize after each step), views (the plan's capture with every parameter's
AccumulateGrad made on the step's stream first), side (both loops on a side stream), nomom (momentum 0),
noforeach, zero (zero_grad(set_to_none=False)). Prints `PROBE {json}`."""

import contextlib
import copy
import functools
import json
import sys
import warnings

import torch

ROOT = __file__.rsplit("/tests/", 1)[0]
sys.path.insert(0, ROOT)
from cgtool.render.plan import HELPER  # noqa: E402  (the helper text the plan pastes: plain PyTorch)

from truth_common import load

VIEWS = '''
def graph_module(module, args, kwargs=None, backward=True, _inner=graph_module):
    # every parameter's AccumulateGrad node made now, on the stream the step will run on, and held while capturing
    held = [p.view_as(p) for p in module.parameters() if p.requires_grad]
    try:
        return _inner(module, args, kwargs, backward)
    finally:
        del held
'''


def main():
    variant = sys.argv[1]
    flags = set(variant.split("+"))
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    warnings.simplefilter("always")
    caught = []
    warnings.showwarning = lambda m, *a, **kw: caught.append(str(m)[:160])
    mod = load(f"{ROOT}/samples/modules/resnet_autocast_train.py")
    dev = torch.device("cuda")
    state = mod.setup(dev)
    for i in range(0 if "fresh" in flags else 3):  # fresh: the plan pasted right after setup
        mod.step(**state, **mod.inputs(i, dev))
    torch.cuda.synchronize()
    eager, graphed = copy.deepcopy(state), copy.deepcopy(state)
    for s in (eager, graphed):
        if "nomom" in flags:
            s["opt"].param_groups[0]["momentum"] = 0.0
        if "noforeach" in flags:
            s["opt"].param_groups[0]["foreach"] = False
        if "zero" in flags:
            s["opt"].zero_grad = functools.partial(type(s["opt"]).zero_grad, s["opt"], set_to_none=False)
    side = torch.cuda.Stream() if ("side" in flags or "sidestep" in flags) else None
    ctx = (lambda: torch.cuda.stream(side)) if side is not None else contextlib.nullcontext
    plan_ctx = ctx if "side" in flags else contextlib.nullcontext  # sidestep: graphed on the default stream (cgtool)
    step = mod.step
    if "noitem" in flags:  # the sample's step without its loss.item() (which syncs the host every step)
        import torch.nn.functional as F

        def step(model, opt, log, images, labels):
            opt.zero_grad(set_to_none=True)
            with torch.autocast(images.device.type, dtype=torch.bfloat16):
                loss = F.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()
            log.append(loss.detach())
            return loss.detach()
    helper = HELPER + (VIEWS if "views" in flags else "")
    plan = helper + '''
_saved = [{k: v.detach().clone() for k, v in m.state_dict().items()} for m in (model,)]
with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):  # as the step calls it
    graph_module(model, (torch.randn((32, 3, 64, 64), device="cuda", dtype=torch.float32).to(memory_format=torch.channels_last),), {}, backward=True)
put_back((model,), _saved)
'''
    with plan_ctx():
        exec(compile(plan, "modules-plan.py", "exec"), dict(graphed))
    torch.cuda.synchronize()
    plan_warnings = list(caught)
    caught.clear()
    rows, first = [], None
    if "noitem" in flags:  # no host sync between steps: each side runs its k steps queued, compared afterwards
        runs, made = {}, [mod.inputs(10 + n, dev) for n in range(k)]  # made first: a host copy waits on the stream
        torch.cuda.synchronize()
        for name, st in (("eager", eager), ("graphed", graphed)):
            losses, params = [], []
            with ctx():
                for n in range(k):
                    losses.append(step(**st, **made[n]))
                    params.append([p.detach().clone() for p in st["model"].parameters()])
            runs[name] = (losses, params)
        torch.cuda.synchronize()
        for n in range(k):
            le, lg = runs["eager"][0][n], runs["graphed"][0][n]
            diffs = [float((a.float() - b.float()).abs().max()) for a, b in zip(runs["eager"][1][n], runs["graphed"][1][n])]
            rows.append({"loss_diff": float((le - lg).abs()), "params_differ": sum(d > 0 for d in diffs)})
            if first is None and (rows[-1]["loss_diff"] > 0 or rows[-1]["params_differ"]):
                first = n + 1
    for n in range(0 if "noitem" in flags else k):
        inp = mod.inputs(10 + n, dev)
        with ctx():
            le = step(**eager, **inp)
            lg = step(**graphed, **inp)
        if "sync" in flags:
            torch.cuda.synchronize()
        torch.cuda.synchronize()
        pe = dict(eager["model"].named_parameters())
        diff = {name: float((p.detach().float() - pe[name].detach().float()).abs().max())
                for name, p in graphed["model"].named_parameters()}
        bad = {n2: d for n2, d in diff.items() if d > 0}
        gptr = [p.grad.data_ptr() if p.grad is not None else 0 for p in graphed["model"].parameters()]
        st = graphed["opt"].state
        alias = sum(1 for p in graphed["model"].parameters() if p in st and "momentum_buffer" in st[p]
                    and st[p]["momentum_buffer"] is not None and p.grad is not None
                    and st[p]["momentum_buffer"].data_ptr() == p.grad.data_ptr())
        row = {"step": n + 1, "loss_diff": float((le - lg).abs()), "params_differ": len(bad),
               "max_param_diff": max(diff.values()), "grad_ptr0": gptr[0], "mom_aliases_grad": alias}
        rows.append(row)
        if first is None and (row["loss_diff"] > 0 or bad):
            first = n + 1
    print("PROBE " + json.dumps({"variant": variant, "first_differing_step": first,
                                 "loss_diff": [round(r["loss_diff"], 4) for r in rows],
                                 "params_differ": [r["params_differ"] for r in rows],
                                 "plan_warnings": sorted({w[:90] for w in plan_warnings}),
                                 "step_warnings": sorted({w[:90] for w in caught}),
                                 "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
