"""Record, on a GPU, what issue 22 (graph node -> user's line, time per node in replay) needs as CPU fixtures.

    OUT=/some/dir python3 tests/gpu/record_nodes.py            # the default models below, one subprocess each
    python3 tests/gpu/record_nodes.py --out DIR path/to/script.py ...

One gzipped JSON per script, DIR/<stem>.nodes.json.gz (schema "cgtool-node-fixture/1"):
  graph          cgtool's Graph.to_json() of the captured graph (node ids in cuGraphGetNodes order)
  trace          the capture iteration as cgtool's tracer records it: {"frames": [...], "ops": [OpRecord json]}
  capture_nodes  truth, one row per aten op seen while capturing: [index of the tracer's last op (the tracer's
                 mode runs first and records it; -1 when not recording), op name, node count before, node count
                 after (cuGraphGetNodes count of the capturing graph), path of the innermost running module]
  eager          one profiled eager step: "ops" [[name, external id]], "kernels" [[name, cat, dur_us, op index
                 or -1]] in GPU start order (op index: the innermost cpu_op whose launch call made it); "outer":
                 cgtool's own reading of the same trace (kernel_split.eager_events): {"kernels": [[name, cat,
                 dur_us, index of the outermost op or -1]], "cpu_us": [each outermost op's CPU µs]}
  replays        REPLAYS profiled replays, each [[name, cat, dur_us]] in GPU start order (kernel_split.replay_events)
  inductor       compiled scripts only: generated code's kernel lines and comments, dynamo FX nodes' stacks;
                 "calls": each generated module with a call(): {"path", "code" (whole), "linemap" ([start lines],
                 [stack traces]) as PyCodeCache.linemaps holds it}
  errors         what failed (the rest is still written)
The run of one script never stops the others; each prints one line.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = ["samples/mlp_inference.py", "samples/multistream.py", "tests/realworld/clean/hf_llama_infer.py",
           "tests/realworld/clean/hf_bert_padded_infer.py", "tests/realworld/clean/hf_gpt2_train.py",
           "tests/realworld/clean/tv_resnet18_infer.py", "samples/compiled/no_cudagraphs.py",
           "tests/gpu/scripts/compiled_block.py"]
WARMUP, REPLAYS = 3, 5
KERNEL_CATS = ("kernel", "gpu_memcpy", "gpu_memset")  # as cgtool/capture/kernel_split.TIMED_CATS


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scripts", nargs="*")
    ap.add_argument("--out", default=os.environ.get("OUT") or "node-fixtures")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        return record(a.scripts[0], a.out)
    from concurrent.futures import ThreadPoolExecutor

    def one(s: str) -> None:
        t0 = time.time()
        try:
            r = subprocess.run([sys.executable, __file__, "--child", "--out", a.out, s], timeout=300)
            print(f"{s}: rc={r.returncode} {time.time() - t0:.0f}s", flush=True)
        except subprocess.TimeoutExpired:
            print(f"{s}: timed out", flush=True)

    with ThreadPoolExecutor(3) as pool:  # three at a time on one GPU: each is small
        list(pool.map(one, a.scripts or DEFAULT))
    return 0


class NodeCounter:
    """A dispatch mode entered under the tracer's (so the tracer records an op first): the capturing graph's node
    count around each op, independent of cgtool's own count (OpRecord.node), plus the running module's path."""

    def __init__(self, tracer) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from cuda.bindings import driver, runtime

        self.rows: list[list] = []
        self.enabled = True
        self.names: dict[int, str] = {}  # id(module) -> path from the state's argument names ("model.layers.0")
        self.stack: list[str] = []  # paths of the modules whose forward is running
        tracer_ = tracer
        rows, stack, me = self.rows, self.stack, self

        def count() -> int:
            import torch
            if not me.enabled:
                return -1
            res = runtime.cudaStreamGetCaptureInfo(torch.cuda.current_stream().cuda_stream)
            if int(res[0]) != 0 or int(res[1]) != 1:
                return -1
            r = driver.cuGraphGetNodes(res[3], 0)
            return int(r[-1]) if int(r[0]) == 0 else -1

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                before = count()
                out = func(*args, **(kwargs or {}))
                if before >= 0:  # capturing (warmup ops pass through)
                    ops = tracer_.ops
                    rows.append([len(ops) - 1 if ops is not None else -1, str(func), before, count(),
                                 stack[-1] if stack else ""])
                return out

        self.mode = Mode()

    def name_modules(self, state, phase: str) -> None:
        """on_state of run_to_capture: name every module of the state by its path from the argument names."""
        import torch

        if phase != "setup":
            return
        values = [(f"arg{i}", v) for i, v in enumerate(state.args)] + list(state.kwargs.items())
        for name, v in values:
            if isinstance(v, torch.nn.Module):
                for sub, m in v.named_modules(prefix=name):
                    self.names.setdefault(id(m), sub)

    @contextmanager
    def module_hooks(self):
        """Global forward hooks keep the stack of running modules (named ones only)."""
        import torch.nn.modules.module as mm

        names, stack = self.names, self.stack

        def pre(module, args):
            stack.append(names.get(id(module), stack[-1] if stack else ""))

        def post(module, args, out):
            if stack:
                stack.pop()

        h1, h2 = mm.register_module_forward_pre_hook(pre), mm.register_module_forward_hook(post)
        try:
            yield
        finally:
            h1.remove()
            h2.remove()


class Analysis:
    """cgtool's GPU analysis (its tracer counting nodes too), with the recorder's own node counter under it."""

    def __init__(self) -> None:
        from cgtool.pipeline.gpu_analysis import GpuAnalysis

        self.inner = GpuAnalysis()
        self.counter = NodeCounter(self.inner.tracer)

    @contextmanager
    def tracing(self):
        # below the tracer's modes (entered before its iterations): the tracer records an op, then this counts
        # the nodes its kernels add; the tracer's iteration must be entered by the harness itself (its anchor)
        with self.inner.tracing(), self.counter.module_hooks(), self.counter.mode:
            yield

    def iteration(self, index, inputs=None):
        return self.inner.iteration(index, inputs)

    def last_user_frame(self):
        return self.inner.last_user_frame()


def profiled(fn, n: int) -> list[dict]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            data = json.load(fh)
    return data.get("traceEvents", data) if isinstance(data, dict) else data


def eager_kernels(events: list[dict]) -> dict:
    """Kernels in GPU order with the innermost cpu_op whose runtime call launched them."""
    ops = sorted((e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"),
                 key=lambda e: float(e.get("ts", 0)))
    op_rows = [[e.get("name"), (e.get("args") or {}).get("External id")] for e in ops]
    spans = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), i) for i, e in enumerate(ops)]
    launch_ts = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                launch_ts[c] = float(e.get("ts", 0))
    kernels = sorted((e for e in events if e.get("cat") in KERNEL_CATS and e.get("ph") == "X"),
                     key=lambda e: float(e.get("ts", 0)))
    rows = []
    for k in kernels:
        ts = launch_ts.get((k.get("args") or {}).get("correlation"))
        inner = -1
        if ts is not None:  # the innermost (latest-starting) op whose span holds the launch call
            for lo, hi, i in spans:
                if lo <= ts <= hi:
                    inner = i
        rows.append([k.get("name"), k.get("cat"), float(k.get("dur", 0)), inner])
    return {"ops": op_rows, "kernels": rows}


def inductor_info(fx_rows: list) -> dict:
    """Generated code of inductor's compiled modules: the kernel definition lines and the comments before them."""
    info: dict = {"fx_nodes": fx_rows, "modules": []}
    try:
        from torch._inductor.codecache import PyCodeCache

        mods = getattr(PyCodeCache, "modules", None) or list(getattr(PyCodeCache, "cache", {}).values())
        for m in mods:
            path = getattr(m, "__file__", None)
            if not path or not os.path.exists(path):
                continue
            with open(path) as fh:
                lines = fh.read().splitlines()
            # comments (in call() they are indented: "# Topologically Sorted Source Nodes: [...]" before each
            # launch), kernel definitions, launches in call() order, extern calls (cuBLAS and friends)
            keep = [ln for ln in lines if ln.lstrip().startswith("#") or "async_compile.triton(" in ln
                    or "def triton" in ln or ".run(" in ln or "extern_kernels." in ln or "def call(" in ln]
            info["modules"].append({"path": os.path.basename(path), "lines": keep[:6000]})
        from cgtool.capture.inductor_modules import generated_modules

        info["calls"] = [{"path": os.path.basename(p), "code": code,
                          "linemap": [list(lm[0]), list(lm[1])] if lm and len(lm) == 2 else None}
                         for p, code, lm in generated_modules()]
        linemaps = getattr(PyCodeCache, "linemaps", None)  # generated line -> original FX node stack, per module
        if isinstance(linemaps, dict):
            info["linemaps"] = {os.path.basename(str(k)): str(v)[:20000] for k, v in list(linemaps.items())[:20]}
    except Exception as exc:  # noqa: BLE001
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


def record(script_path: str, out_dir: str) -> int:
    import torch

    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script_path)))
    from cgtool.capture.harness import read_graph, run_to_capture
    from cgtool.capture.kernel_split import replay_events
    from cgtool.model.job import RunSettings
    from cgtool.model.phase_log import PhaseLog
    from cgtool.script.contract import load_script
    from cgtool.script.session import ScriptSession

    stem = os.path.splitext(os.path.basename(script_path))[0]
    fx: dict = {"schema": "cgtool-node-fixture/1", "script": os.path.relpath(os.path.abspath(script_path), ROOT),
                "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "errors": []}
    compiled = "compiled" in script_path
    fx_rows: list = []
    if compiled:  # dynamo's FX nodes with their user stacks, then inductor as usual
        import torch._dynamo
        from torch._inductor.compile_fx import compile_fx

        def backend(gm, example_inputs):
            for n in gm.graph.nodes:
                fx_rows.append([n.name, n.op, str(n.target), n.meta.get("stack_trace")])
            return compile_fx(gm, example_inputs)

        real_compile = torch.compile

        def compile_with_backend(model=None, *args, **kwargs):
            kwargs["backend"] = backend
            kwargs.pop("mode", None)
            return real_compile(model, *args, **kwargs) if model is not None else real_compile(*args, **kwargs)

        torch.compile = compile_with_backend
    try:
        script = load_script(os.path.abspath(script_path))
        device = torch.device("cuda")
        analysis = None if compiled else Analysis()
        t0 = time.perf_counter()
        on_state = analysis.counter.name_modules if analysis is not None else None
        try:
            captured = run_to_capture(ScriptSession(script, device), RunSettings(warmup=WARMUP), PhaseLog(),
                                      analysis=analysis, on_state=on_state)
        except Exception:  # noqa: BLE001 - once more without the node counter (the trace is still recorded)
            if analysis is None:
                raise
            fx["errors"].append("capture with the node counter: " + traceback.format_exc(limit=6))
            analysis = Analysis()
            analysis.counter.enabled = False
            analysis.inner.tracer.node_count = None
            t0 = time.perf_counter()
            captured = run_to_capture(ScriptSession(script, device), RunSettings(warmup=WARMUP), PhaseLog(), analysis=analysis)
        fx["capture_s"] = time.perf_counter() - t0
        graph, read_ms, _ = read_graph(captured, None)
        fx["graph"] = graph.to_json()
        if analysis is not None:
            trace = analysis.inner.tracer.trace
            cap = [it for it in trace.iterations if it.phase == "capture"]
            fx["trace"] = {"frames": [f.to_json() for f in trace.frames],
                           "ops": [o.to_json() for o in (cap[-1].ops if cap else [])]}
            fx["capture_nodes"] = analysis.counter.rows
        captured.graph.replay()
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001
        fx["errors"].append("capture: " + traceback.format_exc(limit=6))
        return write(fx, out_dir, stem)
    try:
        stream = captured.stream

        def eager() -> None:
            with torch.cuda.stream(stream):
                captured.session.call(captured.static_inputs)

        eager()
        events = profiled(eager, 1)
        fx["eager"] = eager_kernels(events)
        from cgtool.capture.kernel_split import eager_events

        rows, cpu_us = eager_events(events)
        fx["eager"]["outer"] = {"kernels": [list(r) for r in rows], "cpu_us": cpu_us}
    except Exception:  # noqa: BLE001
        fx["errors"].append("eager: " + traceback.format_exc(limit=6))
    try:
        for _ in range(3):
            captured.graph.replay()
        fx["replays"] = [[list(e) for e in r] for r in replay_events({"traceEvents": profiled(captured.graph.replay, REPLAYS)})]
    except Exception:  # noqa: BLE001
        fx["errors"].append("replays: " + traceback.format_exc(limit=6))
    if compiled:
        fx["inductor"] = inductor_info(fx_rows)
    return write(fx, out_dir, stem)


def write(fx: dict, out_dir: str, stem: str) -> int:
    path = os.path.join(out_dir, f"{stem}.nodes.json.gz")
    with gzip.open(path, "wt") as fh:
        json.dump(fx, fh, separators=(",", ":"))
    g = fx.get("graph", {})
    print(f"{stem}: {len(g.get('nodes', []))} nodes, {len(fx.get('capture_nodes', []))} capture ops, "
          f"{len(fx.get('eager', {}).get('kernels', []))} eager kernels, "
          f"{[len(r) for r in fx.get('replays', [])]} replay kernels, {len(fx['errors'])} errors "
          f"-> {path} ({os.path.getsize(path) // 1024} KiB)", flush=True)
    for e in fx["errors"]:
        print(e, flush=True)
    return 1 if fx["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
