"""The torch APIs partial capture (docs/partial.md) depends on, probed on the GPU: the truth of
tests/gpu/test_partial_gpu.py. `python tests/gpu/partial_truth.py [NAME...]` (compiled, profiler, graphed_module)
prints one `PROBE name: ...` line per probe and never stops the others.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback

import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def probe(name):  # noqa: ANN001, ANN201
    def wrap(fn):  # noqa: ANN001, ANN202
        def run() -> None:
            try:
                print(f"PROBE {name}: {fn()}", flush=True)
            except Exception as exc:
                traceback.print_exc()
                print(f"PROBE {name}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        return run
    return wrap


def _model():  # noqa: ANN202
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 10)).cuda()


def _step(model, opt, log, x, y):  # noqa: ANN001, ANN202
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    log.append(loss.item())
    opt.step()
    return loss.detach()


@probe("compile cudagraphs + .item() + break reasons + kept graphs")
def compiled() -> str:
    from torch._dynamo.backends.debugging import ExplainWithBackend

    from cgtool.capture.pieces import kept_graphs, skip_messages, split_points

    torch._dynamo.reset()
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(32, 64, device="cuda"), torch.randint(0, 10, (32,), device="cuda")
    log: list[float] = []
    # One eager step first, as cgtool's piecewise job warms up eagerly: SGD's momentum buffers are made lazily on
    # the first step; made inside a compiled piece they are cudagraph-tree outputs that the next replay overwrites
    # ("accessing tensor output of CUDAGraphs that has been overwritten", the first H100 run).
    _step(model, opt, log, x, y)
    eb = ExplainWithBackend("cudagraphs")
    fn = torch.compile(_step, backend=eb)
    with kept_graphs() as kept, skip_messages() as skips:
        for _ in range(4):
            torch.compiler.cudagraph_mark_step_begin()
            fn(model, opt, log, x, y)
        torch.cuda.synchronize()
    raw = []
    for g in kept:
        try:
            raw.append(g.raw_cuda_graph())
        except Exception as exc:
            raw.append(f"no raw graph: {type(exc).__name__}")
    from torch._dynamo.utils import counters

    reasons = [(r.reason[:80], [(f.filename.rsplit('/', 1)[-1], f.lineno) for f in r.user_stack][-2:])
               for r in eb.break_reasons]
    return (f"dynamo graphs {len(eb.graphs)}; break reasons {reasons}; split points "
            f"{[(s.frame.line if s.frame else None, s.reason[:40]) for s in split_points(eb.break_reasons)]}; "
            f"CUDAGraphs made {len(kept)}, raw handles {raw}; skips {skips}; counters graph_break "
            f"{dict(counters['graph_break'])}, inductor {dict(counters['inductor'])}; log {len(log)} losses")


@probe("profiler: kernels inside cudaGraphLaunch vs launched one by one")
def profiler() -> str:
    from cgtool.pipeline.piecewise_job import profile_split

    torch._dynamo.reset()
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64, device="cuda"), torch.randint(0, 10, (32,), device="cuda")
    log: list[float] = []
    _step(model, opt, log, x, y)  # eager first (see compiled())
    fn = torch.compile(_step, backend="cudagraphs")

    def run() -> None:
        torch.compiler.cudagraph_mark_step_begin()
        fn(model, opt, log, x, y)

    for _ in range(3):
        run()
    s = profile_split(run, steps=3)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        prof.export_chrome_trace(path)
        events = json.load(open(path))["traceEvents"]
    launches = sorted({e["name"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")})
    kernel_args = next((sorted((e.get("args") or {}).keys()) for e in events if e.get("cat") == "kernel"), [])
    return (f"steps {s.steps}; in graphs {s.kernels_in_graphs} kernels {s.us_in_graphs:.0f} us; outside "
            f"{s.kernels_outside} kernels {s.us_outside:.0f} us; launches per step {s.launches}; outside {s.outside[:4]}; "
            f"runtime calls seen {launches[:12]}; kernel event args {kernel_args}")


@probe("make_graphed_callables on a submodule (training) and forward-only capture")
def graphed_module() -> str:
    from cgtool.capture.module_graphs import Call, graph_module, installed

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 10)).cuda()
    x = torch.randn(32, 64, device="cuda")
    stream = torch.cuda.Stream()
    g = graph_module(model[0], Call((x,), {}, True), stream)
    with installed([g]):
        out = model(x).sum()
        out.backward()
    ref = model[0].weight.grad.clone()
    model.zero_grad()
    model(x).sum().backward()
    same = torch.allclose(ref, model[0].weight.grad, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        g2 = graph_module(model[2], Call((torch.randn(32, 64, device="cuda"),), {}, False), stream)
        with installed([g2]):
            y = model(x)
        y_ref = model(x)
    return (f"training graph kernels {g.kernels}, grads match eager {same}; forward-only kernels {g2.kernels}, "
            f"output matches {torch.allclose(y, y_ref, rtol=1e-4, atol=1e-5)}; fallbacks {g.fallbacks + g2.fallbacks}")


def main() -> int:
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    probes = {"compiled": compiled, "profiler": profiler, "graphed_module": graphed_module}
    for name in sys.argv[1:] or probes:
        probes[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
