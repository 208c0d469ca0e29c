#!/usr/bin/env python3
"""Compile probe: what CUDA Graph Trees (torch.compile mode="reduce-overhead") report for each sample.

Usage:
    python probe.py OUT_DIR [--samples DIR] [--only a,b] [--variants default,nopartition]
                            [--warmup N] [--steady N] [--profile-iters N] [--timeout 120]
                            [--jobs J] [--deadline SECONDS] [--keep-traces] [--no-keep-graph]

For every sample script (cgtool's script contract: setup(device), inputs(i, device), step(**kw)) and
every variant, a child process (this file with --child) runs warmup + steady iterations, then a
profiled pass, and writes OUT_DIR/<sample>__<variant>.json with:
  env, config, log records (logger name, level, raw msg, args, formatted message, source location),
  warnings, per-iteration results and exceptions, torch._dynamo counters after each phase, the
  cudagraph tree (functions, nodes, symint keys, re-record counts), pool memory, a kernel
  classification from the profiler (launched by cudaGraphLaunch or individually), and the raw
  CUDA graphs read with cuda-bindings (node types, kernel names) plus DOT dumps.
Variants: default (torch defaults), nopartition (torch._inductor.config.graph_partition=False),
dynamo_cudagraphs (mode="reduce-overhead" replaced by backend="cudagraphs").
Only torch is required; cuda-bindings is optional. Never hangs: each child has a hard timeout and the
whole run a deadline; a summary table is printed at the end and written to OUT_DIR/summary.json.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

SCHEMA = "cgtool-compile-probe/1"
MAX_LOG_RECORDS = 6000
MAX_MSG_CHARS = 20000
MAX_WARNINGS = 300


# ----------------------------------------------------------------------------------------------
# small helpers (both sides)
# ----------------------------------------------------------------------------------------------
def _short(s, n):
    s = str(s)
    return s if len(s) <= n else s[: n - 3] + "..."


def _jsonable(x, depth=0):
    """Best-effort JSON value; unknown objects become {"type", "repr"}."""
    if x is None or isinstance(x, (bool, int, str)):
        return x if not isinstance(x, str) else _short(x, MAX_MSG_CHARS)
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else repr(x)
    if depth > 4:
        return {"type": type(x).__name__, "repr": _short(repr(x), 300)}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in list(x)[:200]]
    if isinstance(x, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in list(x.items())[:500]}
    try:
        r = repr(x)
    except Exception as e:  # noqa: BLE001
        r = f"<repr failed: {e!r}>"
    return {"type": f"{type(x).__module__}.{type(x).__qualname__}", "repr": _short(r, 2000)}


def _write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=lambda o: _jsonable(o))
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------------
# child side
# ----------------------------------------------------------------------------------------------
class Child:
    def __init__(self, args):
        self.args = args
        self.out_path = args.json
        self.phase = "start"
        self.iteration = None
        self.t0 = time.time()
        self.result = {
            "schema": SCHEMA,
            "sample": os.path.splitext(os.path.basename(args.child))[0],
            "sample_path": os.path.abspath(args.child),
            "variant": args.variant,
            "status": "running",
            "probe_errors": [],
            "logs": [],
            "logs_dropped": 0,
            "warnings": [],
            "iterations": [],
            "counters_by_phase": {},
        }

    # -- bookkeeping ---------------------------------------------------------------------------
    def flush(self):
        self.result["elapsed_s"] = round(time.time() - self.t0, 3)
        try:
            _write_json_atomic(self.out_path, self.result)
        except Exception as e:  # noqa: BLE001
            sys.stderr.write(f"[probe] could not write json: {e!r}\n")

    def perr(self, where, exc=None):
        self.result["probe_errors"].append(
            {"where": where, "phase": self.phase,
             "error": None if exc is None else f"{type(exc).__name__}: {_short(exc, 2000)}",
             "traceback": None if exc is None else _short(traceback.format_exc(), 6000)}
        )

    # -- logging / warnings capture ------------------------------------------------------------
    def install_capture(self):
        import logging
        import warnings

        child = self
        orig_handle = logging.Logger.handle

        def handle(logger_self, record):
            try:
                name = logger_self.name
                if (name.startswith("torch") or name.startswith("triton")) and name != "torch.__trace":
                    child._capture_record(record)
            except Exception:  # noqa: BLE001
                pass
            return orig_handle(logger_self, record)

        logging.Logger.handle = handle

        warnings.simplefilter("always")
        orig_show = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):
            if len(child.result["warnings"]) < MAX_WARNINGS:
                child.result["warnings"].append({
                    "phase": child.phase, "iteration": child.iteration,
                    "category": f"{category.__module__}.{category.__qualname__}",
                    "message": _short(message, MAX_MSG_CHARS),
                    "filename": filename, "lineno": lineno,
                    "t": round(time.time() - child.t0, 4),
                })
            try:
                orig_show(message, category, filename, lineno, file, line)
            except Exception:  # noqa: BLE001
                pass

        warnings.showwarning = showwarning

    def _capture_record(self, record):
        # Logger.handle runs once per record (on the emitting logger), so no de-duplication is needed
        if len(self.result["logs"]) >= MAX_LOG_RECORDS:
            self.result["logs_dropped"] += 1
            return
        try:
            message = record.getMessage()
        except Exception as e:  # noqa: BLE001
            message = f"<getMessage failed: {e!r}>"
        args = record.args
        if isinstance(args, dict):
            args_j = {str(k): _jsonable(v) for k, v in args.items()}
        elif isinstance(args, tuple):
            args_j = [_jsonable(a) for a in args]
        else:
            args_j = _jsonable(args)
        exc_text = None
        if record.exc_info:
            try:
                exc_text = "".join(traceback.format_exception(*record.exc_info))
            except Exception:  # noqa: BLE001
                exc_text = repr(record.exc_info)
        self.result["logs"].append({
            "phase": self.phase, "iteration": self.iteration,
            "t": round(record.created - self.t0, 4),
            "logger": record.name, "level": record.levelname, "levelno": record.levelno,
            "msg": _short(record.msg if isinstance(record.msg, str) else repr(record.msg), MAX_MSG_CHARS),
            "args": args_j,
            "message": _short(message, MAX_MSG_CHARS),
            "pathname": record.pathname, "lineno": record.lineno, "funcName": record.funcName,
            "exc_text": exc_text,
        })

    # -- main ----------------------------------------------------------------------------------
    def run(self):
        self.flush()
        try:
            self._run()
            if self.result["status"] == "running":
                self.result["status"] = "ok"
        except BaseException as e:  # noqa: BLE001
            self.result["status"] = "error"
            self.result["fatal"] = {"type": type(e).__name__, "message": _short(e, 4000),
                                    "traceback": _short(traceback.format_exc(), 12000), "phase": self.phase}
        finally:
            self.phase = "done"
            self.flush()

    def _run(self):
        a = self.args
        self.install_capture()
        self.phase = "import_torch"
        import torch

        env = {"python": sys.version.split()[0], "torch": torch.__version__,
               "torch_git": getattr(torch.version, "git_version", None), "torch_cuda": torch.version.cuda,
               "cuda_available": torch.cuda.is_available(), "argv": sys.argv}
        try:
            import triton  # noqa: F401
            env["triton"] = triton.__version__
        except Exception:  # noqa: BLE001
            env["triton"] = None
        if torch.cuda.is_available():
            env["device_name"] = torch.cuda.get_device_name(0)
            env["capability"] = list(torch.cuda.get_device_capability(0))
        try:
            import cuda.bindings
            env["cuda_bindings"] = cuda.bindings.__version__
        except Exception as e:  # noqa: BLE001
            env["cuda_bindings"] = None
            env["cuda_bindings_error"] = repr(e)
        self.result["env"] = env

        # logs: the cudagraphs artifact at DEBUG (records skip reasons, re-record reasons, partitions),
        # plus recompiles, graph breaks, static input handling
        try:
            torch._logging.set_logs(cudagraphs=True, recompiles=True, graph_breaks=True,
                                    cudagraph_static_inputs=True)
        except Exception as e:  # noqa: BLE001
            self.perr("set_logs", e)

        import torch._dynamo
        import torch._inductor.config as iconf
        if a.variant == "nopartition":
            iconf.graph_partition = False
        elif a.variant == "dynamo_cudagraphs":
            orig_compile = torch.compile

            def compile_patched(*cargs, **ckw):
                if ckw.get("mode") == "reduce-overhead":
                    ckw.pop("mode")
                    ckw["backend"] = "cudagraphs"
                return orig_compile(*cargs, **ckw)

            torch.compile = compile_patched
        elif a.variant != "default":
            raise ValueError(f"unknown variant {a.variant}")

        cuda = torch.cuda.is_available()
        self.cuda = cuda
        self.result["compiled_graphs"] = []
        self._patch_compiled_fx_graph(torch)
        self.device = torch.device("cuda" if cuda else "cpu")
        self.graph_registry = []
        self.cg_impl_registry = []
        if cuda:
            self._patch_trees(torch, keep_graph=not a.no_keep_graph)

        # import the sample (module-level code may change configs)
        self.phase = "import_sample"
        import importlib.util
        spec = importlib.util.spec_from_file_location("probe_sample_" + self.result["sample"], a.child)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        self.result["doc"] = mod.__doc__
        hint = getattr(mod, "PROBE_ITERATIONS", {}) or {}
        warmup = a.warmup if a.warmup is not None else int(hint.get("warmup", 3))
        steady = a.steady if a.steady is not None else int(hint.get("steady", 8))
        self.result["plan"] = {"warmup": warmup, "steady": steady, "profile": a.profile_iters,
                               "device": str(self.device), "keep_graph_patch": bool(cuda and not a.no_keep_graph)}
        self.result["config"] = self._config_snapshot(torch)
        if not cuda:
            self.result["no_cuda"] = True
        self.flush()

        self.phase = "setup"
        setup = getattr(mod, "setup", None)
        make_inputs = getattr(mod, "inputs", None)
        step = getattr(mod, a.entry)
        state = setup(self.device) if setup else None
        self._state = state  # keep the compiled modules alive until collection is done

        def call(i, inp):
            pos, kw = [], {}
            for part in (state, inp):
                if part is None:
                    continue
                if isinstance(part, dict):
                    kw.update(part)
                elif isinstance(part, tuple):
                    pos.extend(part)
                else:
                    pos.append(part)
            return step(*pos, **kw)

        def get_inputs(i):
            return make_inputs(i, self.device) if make_inputs else None

        out = None
        consecutive_exc = 0
        i = 0
        for phase, n in (("warmup", warmup), ("steady", steady)):
            self.phase = phase
            for _ in range(n):
                out, ok = self._one_iteration(torch, i, get_inputs, call, out)
                consecutive_exc = 0 if ok else consecutive_exc + 1
                i += 1
                if consecutive_exc >= 4:
                    self.perr(f"stopping {phase}: 4 consecutive exceptions")
                    break
            self.result["counters_by_phase"][phase] = self._counters(torch)
            self.flush()

        # profiled pass
        self.phase = "profile"
        try:
            self.result["profile"] = self._profile(torch, i, get_inputs, call, out)
        except Exception as e:  # noqa: BLE001
            self.perr("profile", e)
        i += a.profile_iters
        self.result["counters_by_phase"]["profile"] = self._counters(torch)
        self.flush()

        self.phase = "collect"
        self.result["counters"] = self._counters(torch)
        for name, fn in (("tree", self._tree), ("symint_keys", self._symint_keys),
                         ("pool_memory", self._pool_memory), ("raw_graphs", self._raw_graphs)):
            try:
                self.result[name] = fn(torch)
            except Exception as e:  # noqa: BLE001
                self.perr(name, e)
            self.flush()
        del out

    # -- one iteration ---------------------------------------------------------------------------
    def _one_iteration(self, torch, i, get_inputs, call, prev_out):
        self.iteration = i
        rec = {"phase": self.phase, "i": i, "ok": True}
        self.result["in_progress"] = {"phase": self.phase, "iteration": i}  # tells where a timeout hit
        self.flush()
        n_logs0 = len(self.result["logs"])
        n_warn0 = len(self.result["warnings"])
        t = time.perf_counter()
        out = prev_out  # keep the previous output alive during the call, like a training loop does
        try:
            inp = get_inputs(i)
            out = call(i, inp)
            del inp
            if self.cuda:
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            rec["ok"] = False
            rec["exception"] = {"type": f"{type(e).__module__}.{type(e).__qualname__}",
                                "message": _short(e, MAX_MSG_CHARS),
                                "traceback": _short(traceback.format_exc(), 12000)}
        rec["seconds"] = round(time.perf_counter() - t, 4)
        if rec["ok"]:
            rec["outputs"] = self._summarize(torch, out)
        rec["new_log_records"] = len(self.result["logs"]) - n_logs0
        rec["new_warnings"] = len(self.result["warnings"]) - n_warn0
        try:
            rec["tree"] = self._tree_brief(torch)
        except Exception as e:  # noqa: BLE001
            rec["tree"] = {"error": repr(e)}
        self.result["iterations"].append(rec)
        self.result.pop("in_progress", None)
        self.iteration = None
        return out, rec["ok"]

    def _summarize(self, torch, out, depth=0):
        try:
            if isinstance(out, torch.Tensor):
                d = {"shape": list(out.shape), "dtype": str(out.dtype), "device": str(out.device),
                     "requires_grad": out.requires_grad}
                try:
                    d["data_ptr"] = out.data_ptr()
                    if out.numel() <= 4:
                        d["values"] = [float(v) for v in out.detach().float().flatten().tolist()]
                except Exception as e:  # noqa: BLE001  (e.g. overwritten cudagraph output)
                    d["read_error"] = _short(e, 500)
                return d
            if depth < 2 and isinstance(out, dict):
                return {str(k): self._summarize(torch, v, depth + 1) for k, v in out.items()}
            if depth < 2 and isinstance(out, (list, tuple)):
                return [self._summarize(torch, v, depth + 1) for v in out[:16]]
            return _jsonable(out)
        except Exception as e:  # noqa: BLE001
            return {"summarize_error": repr(e)}

    # -- config / counters -----------------------------------------------------------------------
    def _config_snapshot(self, torch):
        import torch._dynamo.config as dconf
        import torch._inductor.config as iconf
        snap = {}
        for k in ("graph_partition", "cpp_wrapper", "freezing"):
            snap[f"inductor.{k}"] = getattr(iconf, k, "<absent>")
        for k in ("cudagraphs", "cudagraph_trees", "cudagraph_skip_dynamic_graphs", "cudagraph_support_input_mutation",
                  "cudagraph_unexpected_rerecord_limit", "cudagraph_dynamic_shape_warn_limit",
                  "cudagraph_or_error", "force_cudagraph_sync", "slow_path_cudagraph_asserts",
                  "cudagraph_capture_sizes", "skip_cudagraph_warmup", "force_cudagraphs_warmup",
                  "cudagraph_min_partition_size", "cudagraph_trees_history_recording"):
            snap[f"inductor.triton.{k}"] = _jsonable(getattr(iconf.triton, k, "<absent>"))
        for k in ("inline_inbuilt_nn_modules", "specialize_int", "specialize_float", "capture_scalar_outputs",
                  "capture_dynamic_output_shape_ops", "recompile_limit", "automatic_dynamic_shapes",
                  "cudagraph_backend_support_input_mutation"):
            snap[f"dynamo.{k}"] = _jsonable(getattr(dconf, k, "<absent>"))
        return snap

    def _counters(self, torch):
        try:
            from torch._dynamo.utils import counters
            return {k: {str(kk): vv for kk, vv in v.items()} for k, v in counters.items() if v}
        except Exception as e:  # noqa: BLE001
            return {"error": repr(e)}

    # -- patches ---------------------------------------------------------------------------------
    def _patch_trees(self, torch, keep_graph):
        import weakref

        import torch._inductor.cudagraph_trees as cgt
        child = self

        # 1) record the deferred_cudagraphify closures (their fn_cache maps symint key -> tree function)
        orig_impl = cgt.cudagraphify_impl

        def cudagraphify_impl(model, inputs, static_input_idxs, *cargs, **ckw):
            info = {"static_input_idxs": list(static_input_idxs),
                    "is_backward": ckw.get("is_backward"), "is_inference": ckw.get("is_inference"),
                    "compile_id": str(ckw.get("compile_id")), "n_inputs": len(inputs),
                    "int_input_idxs": [j for j, x in enumerate(inputs) if isinstance(x, int)],
                    "input_types": [type(x).__name__ for x in inputs][:64],
                    "phase": child.phase, "iteration": child.iteration}
            fn = orig_impl(model, inputs, static_input_idxs, *cargs, **ckw)
            info["fn"] = fn
            child.cg_impl_registry.append(info)
            return fn

        cgt.cudagraphify_impl = cudagraphify_impl

        # 2) keep the cudaGraph_t alive after instantiation so cuda-bindings can read it
        if keep_graph:
            Orig = torch.cuda.CUDAGraph

            # _CUDAGraph is bound with `py::init<bool>(), py::arg("keep_graph") = false`: the flag reaches
            # C++ through __init__ (the Python shim's __new__ only forwards it to pybind's __new__).
            class KeepGraphCUDAGraph(Orig):
                def __new__(cls, keep_graph=False, *cargs, **ckw):  # noqa: ARG003
                    return super().__new__(cls, True, *cargs, **ckw)

                def __init__(self, keep_graph=False, *cargs, **ckw):  # noqa: ARG002
                    super().__init__(True, *cargs, **ckw)
                    try:
                        child.graph_registry.append(weakref.ref(self))
                    except TypeError:
                        pass

            KeepGraphCUDAGraph.__name__ = "CUDAGraph"
            KeepGraphCUDAGraph.__qualname__ = "CUDAGraph"
            torch.cuda.CUDAGraph = KeepGraphCUDAGraph
            # self-test on a trivial capture; undo the patch if anything is off
            test = {"ok": False}
            try:
                g = torch.cuda.CUDAGraph()
                st = torch.cuda.Stream()
                x = torch.ones(8, device="cuda")
                st.wait_stream(torch.cuda.current_stream())
                with torch.cuda.graph(g, stream=st):
                    y = x * 2
                g.replay()
                torch.cuda.synchronize()
                test["raw_cuda_graph"] = int(g.raw_cuda_graph())
                test["replay_value_ok"] = float(y.sum().item()) == 16.0
                test["ok"] = bool(test["raw_cuda_graph"]) and test["replay_value_ok"]
                del g, y, x
                self.graph_registry.clear()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                test["error"] = f"{type(e).__name__}: {_short(e, 1000)}"
            if not test["ok"]:
                torch.cuda.CUDAGraph = Orig
                test["reverted"] = True
            self.result["keep_graph_selftest"] = test

    def _patch_compiled_fx_graph(self, torch):
        """Record inductor's cudagraph decision for every compiled graph, logged or not.

        CompiledFxGraph.__init__ computes disabled_cudagraphs_reason and cudagraph_info.cudagraph_fail_reasons;
        on CPU-only graphs and with graph_partition=True some of these are never logged.
        """
        child = self
        try:
            from torch._inductor import output_code
        except Exception as e:  # noqa: BLE001
            self.perr("import output_code", e)
            return
        cls = output_code.CompiledFxGraph
        orig_init = cls.__init__

        def __init__(self_, *cargs, **ckw):
            orig_init(self_, *cargs, **ckw)
            try:
                info = getattr(self_, "cudagraph_info", None)
                pm = getattr(self_, "partition_maps", None)
                child.result["compiled_graphs"].append({
                    "phase": child.phase, "iteration": child.iteration,
                    "compile_id": str(torch._guards.CompileContext.current_compile_id()),
                    "is_backward": (getattr(self_, "fx_kwargs", {}) or {}).get("is_backward"),
                    "is_inference": (getattr(self_, "fx_kwargs", {}) or {}).get("is_inference"),
                    "device_types": sorted(getattr(self_, "device_types", []) or []),
                    "device_idxs": sorted(getattr(self_, "device_idxs", []) or []),
                    "disabled_cudagraphs_reason": getattr(self_, "disabled_cudagraphs_reason", None),
                    "cudagraph_fail_reasons": None if info is None else list(info.cudagraph_fail_reasons),
                    "cudagraph_info_present": info is not None,
                    "n_partitions": None if pm is None else len(pm),
                    "mutated_inputs": sorted(getattr(self_, "mutated_inputs", []) or []),
                    "mutated_input_idxs": sorted(getattr(self_, "mutated_input_idxs", []) or []),
                })
            except Exception as e:  # noqa: BLE001
                child.perr("CompiledFxGraph.__init__ hook", e)

        cls.__init__ = __init__

    # -- tree ------------------------------------------------------------------------------------
    def _manager(self, torch):
        if not self.cuda:
            return None
        import torch._inductor.cudagraph_trees as cgt
        try:
            return cgt.get_container(torch.cuda.current_device()).tree_manager
        except Exception as e:  # noqa: BLE001
            self.perr("get_container", e)
            return None

    @staticmethod
    def _all_nodes(mgr):
        out = []
        if mgr is None or mgr.roots is None:
            return out
        stack = [(n, 0) for nodes in mgr.roots.values() for n in nodes]
        while stack:
            n, d = stack.pop()
            out.append((n, d))
            for kids in n.children.values():
                stack.extend((k, d + 1) for k in kids)
        return out

    @staticmethod
    def _count_value(counter):
        m = re.match(r"count\((-?\d+)", repr(counter))
        return int(m.group(1)) if m else None

    def _tree_brief(self, torch):
        if not self.cuda:
            return None
        mgr = self._manager(torch)
        if mgr is None:
            return {"manager": None}
        nodes = self._all_nodes(mgr)
        cur = mgr.current_node
        return {
            "graph_nodes": len(nodes),
            "functions": len(mgr.ids_to_funcs),
            "path_state": getattr(mgr.path_state, "name", str(mgr.path_state)),
            "current_node": None if cur is None else {"type": type(cur).__name__,
                                                      "id": getattr(getattr(cur, "id", None), "id", None)},
            "debug_fail_counter": mgr.debug_fail_counter,
            "running_forwards_with_pending_backwards": mgr.running_forwards_with_pending_backwards,
            "memory_allocated": torch.cuda.memory_allocated(),
            "pool_bytes": self._pool_bytes(torch, mgr),
        }

    def _pool_bytes(self, torch, mgr):
        pool = tuple(mgr.cuda_graphs_thread_pool)
        tot = 0
        for seg in torch.cuda.memory_snapshot():
            if tuple(seg.get("segment_pool_id", ())) == pool:
                tot += seg.get("total_size", 0)
        return tot

    def _tree(self, torch):
        if not self.cuda:
            return {"skipped": "no CUDA: CUDA graph trees only exist for CUDA devices"}
        mgr = self._manager(torch)
        if mgr is None:
            return {"manager": None}

        def fid(f):
            return getattr(f, "id", f)

        def gid(g):
            return None if g is None else getattr(g, "id", g)

        funcs = {}
        for f, wf in mgr.ids_to_funcs.items():
            ph = list(wf.placeholders)
            mode = mgr.id_to_mode.get(f)
            funcs[fid(f)] = {
                "function_id": fid(f),
                "name": mgr.get_func_name(f),
                "mode": getattr(mode, "name", str(mode)),
                "compile_id": str(mgr.id_to_compile_id.get(f)),
                "n_inputs": len(ph),
                "placeholder_names": [p.name for p in ph][:100],
                "static_input_idxs": list(wf.static_input_idxs),
                "mutated_input_idxs": list(wf.mutated_input_idxs),
                "mutated_inputs": [{"idx": i, "name": ph[i].name,
                                    "mutating_use_stack_trace": ph[i].mutating_use_stack_trace}
                                   for i in wf.mutated_input_idxs if i < len(ph)],
                "n_constants": len(wf.constants),
                "warmed_up": f in mgr.warmed_up_functions,
                "warned_pending_backward": f in mgr.warned_functions,
                "warned_mutation": f in mgr.warned_mutation,
                "stack_traces": [None if s is None else _short(s, 3000)
                                 for s in (mgr.ids_to_stack_traces.get(f) or [])][:32],
                "graph_ids": [],
            }
        nodes = []
        for n, depth in self._all_nodes(mgr):
            f = fid(n.wrapped_function.id)
            parent = n.parent
            graph = n.graph
            nodes.append({
                "graph_id": gid(n.id), "function_id": f, "depth": depth,
                "parent_graph_id": None if parent is None else gid(parent.id),
                "children": {str(fid(k)): [gid(c.id) for c in v] for k, v in n.children.items()},
                "has_graph": graph is not None,
                "n_outputs": len(n.outputs_metadata),
                "output_nbytes": sum(int(m.get("nbytes", 0)) for m in n.outputs_metadata if isinstance(m, dict)),
                "output_shapes": [list(m["size"]) if isinstance(m, dict) and "size" in m else m
                                  for m in n.outputs_metadata][:32],
                "static_input_idxs": sorted(n.static_input_idxs)[:200],
                "cudagraph_managed_idxs": list(n.cudagraph_managed_idxs),
                "non_static_input_idx": list(n.non_static_input_idx),
            })
            if f in funcs:
                funcs[f]["graph_ids"].append(gid(n.id))
        for f in funcs.values():
            f["n_graphs"] = len(f["graph_ids"])
        return {
            "device_index": mgr.device_index,
            "pool_id": list(mgr.cuda_graphs_thread_pool),
            "path_state": getattr(mgr.path_state, "name", str(mgr.path_state)),
            "functions": list(funcs.values()),
            "nodes": sorted(nodes, key=lambda d: d["graph_id"]),
            "n_graph_nodes": len(nodes),
            "roots": {str(fid(k)): [gid(n.id) for n in v] for k, v in mgr.roots.items()},
            "num_rerecord": {str(gid(k)): {str(fid(kk)): vv for kk, vv in v.items()}
                             for k, v in mgr.num_rerecord.items()},
            "non_cudagraph_managed_mutation_hint": {str(gid(k)): {str(fid(kk)): vv for kk, vv in v.items()}
                                                    for k, v in mgr.non_cudagraph_managed_mutation_hint.items()},
            "debug_fail_counter": mgr.debug_fail_counter,
            "debug_checkpointing_counter": mgr.debug_checkpointing_counter,
            "next_graph_id": self._count_value(mgr.graph_counter),
            "next_function_id": self._count_value(mgr.func_counter),
            "next_warmup_node_id": self._count_value(mgr.warmup_node_counter),
            "current_gen": mgr.current_gen,
            "running_forwards_with_pending_backwards": mgr.running_forwards_with_pending_backwards,
        }

    def _symint_keys(self, torch):
        import functools
        out = []

        def find_fid(obj, depth=0):
            if depth > 6 or obj is None:
                return None
            if isinstance(obj, functools.partial):
                if "function_id" in (obj.keywords or {}):
                    return getattr(obj.keywords["function_id"], "id", None)
                return find_fid(obj.func, depth + 1)
            for cell in getattr(obj, "__closure__", None) or ():
                try:
                    r = find_fid(cell.cell_contents, depth + 1)
                except ValueError:
                    continue
                if r is not None:
                    return r
            return None

        for reg in self.cg_impl_registry:
            fn = reg["fn"]
            names = fn.__code__.co_freevars
            cells = dict(zip(names, fn.__closure__ or ()))
            entry = {k: v for k, v in reg.items() if k != "fn"}
            try:
                fn_cache = cells["fn_cache"].cell_contents
                entry["keys"] = [{"key": _jsonable(k), "function_id": find_fid(v)} for k, v in fn_cache.items()]
            except Exception as e:  # noqa: BLE001
                entry["keys_error"] = repr(e)
            out.append(entry)
        return out

    # -- memory ----------------------------------------------------------------------------------
    def _pool_memory(self, torch):
        if not self.cuda:
            return {"skipped": "no CUDA"}
        mgr = self._manager(torch)
        tree_pool = None if mgr is None else tuple(mgr.cuda_graphs_thread_pool)
        pools = {}
        for seg in torch.cuda.memory_snapshot():
            pid = tuple(seg.get("segment_pool_id", (0, 0)))
            p = pools.setdefault(str(list(pid)), {"segments": 0, "total_size": 0, "allocated_size": 0,
                                                  "active_size": 0, "requested_size": 0,
                                                  "is_tree_pool": pid == tree_pool})
            p["segments"] += 1
            for k in ("total_size", "allocated_size", "active_size", "requested_size"):
                p[k] += int(seg.get(k, 0) or 0)
        st = torch.cuda.memory_stats()
        keep = ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
                "reserved_bytes.all.peak", "active_bytes.all.current", "num_alloc_retries", "num_ooms",
                "segment.all.current")
        return {"tree_pool_id": None if tree_pool is None else list(tree_pool), "pools": pools,
                "tree_pool": pools.get(str(list(tree_pool))) if tree_pool else None,
                "memory_stats": {k: st.get(k) for k in keep}}

    # -- profiler --------------------------------------------------------------------------------
    def _profile(self, torch, i0, get_inputs, call, out):
        from torch.profiler import ProfilerActivity, profile
        n = self.args.profile_iters
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        inps = [get_inputs(i0 + k) for k in range(n)]  # made before profiling: only the step is traced
        if self.cuda:
            torch.cuda.synchronize()
        iters = []
        with profile(activities=acts) as prof:
            for k in range(n):
                self.iteration = i0 + k
                rec = {"i": i0 + k, "ok": True}
                try:
                    out = call(i0 + k, inps[k])
                    inps[k] = None
                    if self.cuda:
                        torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    rec["ok"] = False
                    rec["exception"] = {"type": type(e).__name__, "message": _short(e, 4000)}
                iters.append(rec)
        self.iteration = None
        res = {"iterations": iters, "n": n}
        tdir = tempfile.mkdtemp(prefix="cgprobe_trace_")
        path = os.path.join(tdir, "trace.json")
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                trace = json.load(f)
            res.update(classify_trace(trace, n))
            if self.args.keep_traces:
                dst = os.path.splitext(self.out_path)[0] + ".trace.json"
                shutil.copy(path, dst)
                res["trace_file"] = os.path.basename(dst)
        finally:
            shutil.rmtree(tdir, ignore_errors=True)
        if not self.cuda:
            res["note"] = "no CUDA: only CPU activity was traced; no kernels to classify"
        return res

    # -- raw graphs via cuda-bindings ------------------------------------------------------------
    def _raw_graphs(self, torch):
        if not self.cuda:
            return {"skipped": "no CUDA"}
        mgr = self._manager(torch)
        try:
            from cuda.bindings import driver as drv
            from cuda.bindings import runtime as rt
        except Exception as e:  # noqa: BLE001
            return {"skipped": f"cuda-bindings not importable: {e!r}"}
        try:
            err = drv.cuInit(0)[0]
        except Exception as e:  # noqa: BLE001
            return {"skipped": f"cuInit failed: {e!r}"}
        dot_dir = os.path.splitext(self.out_path)[0] + ".graphs"
        graphs = []
        targets = []
        if mgr is not None:
            for n, _d in self._all_nodes(mgr):
                targets.append(("tree_node", getattr(n.id, "id", None), getattr(n.wrapped_function.id, "id", None),
                                n.graph))
        for kind, g_id, f_id, g in targets:
            entry = {"source": kind, "graph_id": g_id, "function_id": f_id}
            if g is None:
                entry["error"] = "node.graph is None"
                graphs.append(entry)
                continue
            try:
                ptr = g.raw_cuda_graph()
            except Exception as e:  # noqa: BLE001
                entry["error"] = f"raw_cuda_graph() failed (graph not kept; keep_graph=False?): {_short(e, 300)}"
                graphs.append(entry)
                continue
            try:
                entry["handle"] = int(ptr)
                entry.update(read_graph(drv, rt, ptr))
            except Exception as e:  # noqa: BLE001
                entry["error"] = f"read_graph failed: {type(e).__name__}: {_short(e, 500)}"
            if entry.get("n_nodes", 0) and entry["n_nodes"] <= 5000:
                try:
                    os.makedirs(dot_dir, exist_ok=True)
                    p = os.path.join(dot_dir, f"graph_{g_id}.dot")
                    r = rt.cudaGraphDebugDotPrint(ptr, os.fsencode(p), 0)
                    entry["dot"] = os.path.join(os.path.basename(dot_dir), os.path.basename(p)) if int(r[0]) == 0 \
                        else f"cudaGraphDebugDotPrint error {int(r[0])}"
                except Exception as e:  # noqa: BLE001
                    entry["dot"] = f"failed: {e!r}"
            graphs.append(entry)
        alive = [r() for r in self.graph_registry]
        return {"cuInit": int(err), "graphs": graphs,
                "cudagraph_objects_created": len(self.graph_registry),
                "cudagraph_objects_alive": sum(1 for g in alive if g is not None)}


_DEMANGLE = None


def demangle(s):
    global _DEMANGLE
    if not s.startswith("_Z"):
        return s
    try:
        if _DEMANGLE is None:
            import ctypes
            import ctypes.util
            lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
            dm = lib.__cxa_demangle
            dm.restype = ctypes.c_void_p
            dm.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            free = ctypes.CDLL(None).free
            free.argtypes = [ctypes.c_void_p]
            _DEMANGLE = (ctypes, dm, free)
        ctypes, dm, free = _DEMANGLE
        st = ctypes.c_int(0)
        p = dm(s.encode(), None, None, ctypes.byref(st))
        if st.value or not p:
            return s
        try:
            return ctypes.string_at(p).decode(errors="replace")
        finally:
            free(p)
    except Exception:  # noqa: BLE001
        return s


def read_graph(drv, rt, ptr):
    """Node count, node type histogram, kernel names of a cudaGraph_t (int handle)."""
    res = {}
    r = drv.cuGraphGetNodes(ptr)
    if int(r[0]) != 0:
        return {"error": f"cuGraphGetNodes -> {int(r[0])}"}
    n = r[-1]
    r = drv.cuGraphGetNodes(ptr, n)
    nodes = list(r[1])[:n]
    res["n_nodes"] = n
    types = {}
    kernels = {}
    errors = {}
    for node in nodes:
        try:
            e, t = drv.cuGraphNodeGetType(node)
            tname = getattr(t, "name", str(t))
            tname = tname.replace("CU_GRAPH_NODE_TYPE_", "")
        except Exception as ex:  # noqa: BLE001
            tname = f"<type error {type(ex).__name__}>"
        types[tname] = types.get(tname, 0) + 1
        if tname == "KERNEL":
            name = None
            try:
                e, kp = drv.cuGraphKernelNodeGetParams(node)
                if int(e) == 0:
                    fn = getattr(kp, "func", None)
                    if fn is not None and int(fn):
                        e2, nm = drv.cuFuncGetName(fn)
                        if int(e2) == 0:
                            name = nm.decode(errors="replace") if isinstance(nm, bytes) else str(nm)
                    kern = getattr(kp, "kern", None)
                    if name is None and kern is not None and int(kern):
                        e2, nm = drv.cuKernelGetName(kern)
                        if int(e2) == 0:
                            name = nm.decode(errors="replace") if isinstance(nm, bytes) else str(nm)
                else:
                    errors[f"cuGraphKernelNodeGetParams:{int(e)}"] = errors.get(f"cuGraphKernelNodeGetParams:{int(e)}", 0) + 1
            except Exception as ex:  # noqa: BLE001
                k = f"{type(ex).__name__}: {_short(ex, 120)}"
                errors[k] = errors.get(k, 0) + 1
            name = demangle(name) if name else "<unknown>"
            kernels[name] = kernels.get(name, 0) + 1
    res["node_types"] = types
    res["kernels"] = [{"name": _short(k, 400), "count": v} for k, v in sorted(kernels.items(), key=lambda kv: -kv[1])]
    res["n_kernel_nodes"] = types.get("KERNEL", 0)
    if errors:
        res["errors"] = errors
    return res


def classify_trace(trace, n_iters):
    """Classify GPU activities of a kineto chrome trace: launched by cudaGraphLaunch or individually.

    CUPTI gives every kernel of a graph launch the correlation id of the cudaGraphLaunch runtime call,
    so kernel.args.correlation -> runtime/driver event name decides.
    """
    evs = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    api = {}
    api_counts = {}
    gpu = []
    cats = {}
    kernel_arg_keys = set()
    for e in evs:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat", "")
        cats[cat] = cats.get(cat, 0) + 1
        a = e.get("args") or {}
        if cat in ("cuda_runtime", "cuda_driver", "Runtime", "Driver"):
            c = a.get("correlation")
            if c is not None:
                api[c] = e.get("name", "")
            api_counts[e.get("name", "")] = api_counts.get(e.get("name", ""), 0) + 1
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"):
            gpu.append(e)
            if cat.lower() == "kernel":
                kernel_arg_keys.update(a.keys())
    res = {"trace_categories": cats, "kernel_arg_keys": sorted(kernel_arg_keys)}
    launches = {k: v for k, v in api_counts.items()
                if "Launch" in k or "Memcpy" in k or "Memset" in k or "GraphLaunch" in k}
    res["api_launch_calls"] = launches
    res["graph_launches"] = sum(v for k, v in api_counts.items() if "GraphLaunch" in k)
    totals = {"graph": {"count": 0, "dur_us": 0.0}, "individual": {"count": 0, "dur_us": 0.0},
              "unmatched": {"count": 0, "dur_us": 0.0}}
    by_kind = {}
    names = {}
    for e in gpu:
        a = e.get("args") or {}
        src = api.get(a.get("correlation"))
        if src is None:
            how = "unmatched"
        elif "GraphLaunch" in src:
            how = "graph"
        else:
            how = "individual"
        kind = e.get("cat", "").lower()
        dur = float(e.get("dur", 0) or 0)
        totals[how]["count"] += 1
        totals[how]["dur_us"] += dur
        bk = by_kind.setdefault(kind, {"graph": 0, "individual": 0, "unmatched": 0})
        bk[how] += 1
        key = (how, _short(demangle(e.get("name", "")), 160), src)
        names[key] = names.get(key, 0) + 1
    for v in totals.values():
        v["dur_us"] = round(v["dur_us"], 3)
    all_n = sum(v["count"] for v in totals.values())
    res["gpu_activities"] = totals
    res["by_kind"] = by_kind
    res["n_gpu_activities"] = all_n
    res["graph_share_count"] = None if all_n == 0 else round(totals["graph"]["count"] / all_n, 4)
    all_d = sum(v["dur_us"] for v in totals.values())
    res["graph_share_time"] = None if all_d == 0 else round(totals["graph"]["dur_us"] / all_d, 4)
    k = by_kind.get("kernel", {})
    kn = sum(k.values()) if k else 0
    res["kernel_graph_share_count"] = None if kn == 0 else round(k.get("graph", 0) / kn, 4)
    res["per_iteration"] = {"gpu_activities": round(all_n / max(n_iters, 1), 2),
                            "graph_launches": round(res["graph_launches"] / max(n_iters, 1), 2)}
    top = sorted(names.items(), key=lambda kv: -kv[1])[:60]
    res["activities"] = [{"how": k[0], "name": k[1], "launched_by": k[2], "count": v} for k, v in top]
    return res


# ----------------------------------------------------------------------------------------------
# parent side
# ----------------------------------------------------------------------------------------------
_ACTIVE = set()  # child processes started by this parent (each leads its own process group)


def _kill_children_and_exit(signum, _frame):
    for proc in list(_ACTIVE):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    sys.stderr.write(f"[probe] signal {signum}: killed {len(_ACTIVE)} child run(s); JSON written so far is kept\n")
    os._exit(128 + signum)


def run_child(task, a, deadline, tmp_root):
    sample_path, variant, json_path = task
    name = os.path.basename(json_path)[:-5]
    remaining = deadline - time.time()
    if remaining < 15:
        stub = {"schema": SCHEMA, "sample": os.path.splitext(os.path.basename(sample_path))[0],
                "variant": variant, "status": "not_run", "reason": "global deadline reached"}
        _write_json_atomic(json_path, stub)
        return stub
    timeout = min(a.timeout, remaining - 5)
    cache = tempfile.mkdtemp(prefix=f"inductor_{name}_", dir=tmp_root)
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = cache  # cold, hermetic inductor/AOT caches: same code path each run
    env.setdefault("TRITON_CACHE_DIR", os.path.join(tmp_root, "triton"))
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("TORCH_LOGS", None)
    if a.compile_threads is not None:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = str(a.compile_threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", sample_path, "--variant", variant,
           "--json", json_path, "--profile-iters", str(a.profile_iters), "--entry", a.entry,
           "--child-timeout", str(timeout)]
    if a.warmup is not None:
        cmd += ["--warmup", str(a.warmup)]
    if a.steady is not None:
        cmd += ["--steady", str(a.steady)]
    if a.keep_traces:
        cmd.append("--keep-traces")
    if a.no_keep_graph:
        cmd.append("--no-keep-graph")
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    t0 = time.time()
    status_override = None
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, start_new_session=True, env=env)
    _ACTIVE.add(proc)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        status_override = "timeout"
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # our own child's process group only
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        except ProcessLookupError:
            pass
        rc = proc.returncode
    finally:
        _ACTIVE.discard(proc)
    wall = time.time() - t0

    def tail(f, n):
        f.seek(0)
        data = f.read().decode(errors="replace")
        return data[-n:]

    res = None
    if os.path.exists(json_path):
        try:
            with open(json_path) as f:
                res = json.load(f)
        except Exception as e:  # noqa: BLE001
            res = {"probe_errors": [{"where": "parent: reading child json", "error": repr(e)}]}
    if res is None:
        res = {"schema": SCHEMA, "sample": os.path.splitext(os.path.basename(sample_path))[0],
               "variant": variant, "status": "crashed", "probe_errors": []}
    if status_override:
        res["status"] = status_override
        res["timeout_s"] = timeout
    elif res.get("status") in (None, "running"):
        res["status"] = "crashed"
    res["returncode"] = rc
    res["wall_s"] = round(wall, 2)
    res["stdout_tail"] = tail(out_f, 4000)
    res["stderr_tail"] = tail(err_f, 12000)
    out_f.close()
    err_f.close()
    _write_json_atomic(json_path, res)
    shutil.rmtree(cache, ignore_errors=True)
    return res


def summarize(res):
    """One row of the summary table."""
    logs = res.get("logs") or []
    skip_msgs = [r["message"] for r in logs if "skipping cudagraph" in r.get("message", "")
                 or "disabling cudagraphs" in r.get("message", "")]
    first_skip = ""
    if skip_msgs:
        m = skip_msgs[0]
        while m.startswith("skipping cudagraphs due to "):
            m = m[len("skipping cudagraphs due to "):]
        first_skip = m.split(" Found from")[0].split(". Found from")[0].strip().replace("\n", " ")
    counters = res.get("counters") or {}
    ind = counters.get("inductor", {}) if isinstance(counters, dict) else {}
    tree = res.get("tree") or {}
    funcs = tree.get("functions") or []
    iters = res.get("iterations") or []
    exc = [it for it in iters if not it.get("ok", True)]
    prof = res.get("profile") or {}
    raw = res.get("raw_graphs") or {}
    raw_nodes = [g.get("n_nodes") for g in raw.get("graphs", []) if isinstance(g, dict) and "n_nodes" in g]
    pm = (res.get("pool_memory") or {}).get("tree_pool") or {}
    rerec = 0
    for v in (tree.get("num_rerecord") or {}).values():
        rerec += sum(v.values())
    rerecord_logs = sum(1 for r in logs if "Re-recording" in r.get("message", ""))
    record_logs = sum(1 for r in logs if "Recording function=" in r.get("message", ""))
    return {
        "sample": res.get("sample"), "variant": res.get("variant"), "status": res.get("status"),
        "iters": len(iters), "exc": len(exc),
        "exc_first": (exc[0]["exception"]["message"][:70].replace("\n", " ") if exc else ""),
        "skips": ind.get("cudagraph_skips", 0), "partitions": ind.get("cudagraph_partitions", 0),
        "skip_reason": first_skip[:70],
        "fns": len(funcs), "graphs": tree.get("n_graph_nodes"),
        "rerec_logs": rerecord_logs, "rec_logs": record_logs, "rerec_limit_cnt": rerec,
        "warns": len([w for w in res.get("warnings") or [] if "CUDAGraph" in w.get("message", "")]),
        "cg_warn_logs": sum(1 for r in logs if r.get("levelno", 0) >= 30 and "cudagraph" in r.get("logger", "")),
        "symint_keys": sum(len(e.get("keys") or []) for e in res.get("symint_keys") or [] if isinstance(e, dict)),
        "pool_MiB": round(pm.get("total_size", 0) / 2**20, 1) if pm else None,
        "graph_share": prof.get("graph_share_count"),
        "gpu_acts": prof.get("n_gpu_activities"),
        "raw_nodes": raw_nodes[:6],
        "no_cuda": bool(res.get("no_cuda")),
        "wall_s": res.get("wall_s"),
    }


def print_table(rows):
    cols = [("sample", 26), ("variant", 11), ("status", 8), ("exc", 3), ("skips", 5), ("partitions", 5),
            ("cg_warn_logs", 5), ("warns", 5), ("fns", 3), ("graphs", 6), ("symint_keys", 5), ("rec_logs", 5), ("rerec_logs", 5),
            ("pool_MiB", 8), ("graph_share", 6), ("gpu_acts", 6), ("wall_s", 6), ("skip_reason", 60)]
    head = " ".join(f"{c[:w]:<{w}}" for c, w in cols)
    print(head)
    print("-" * len(head))
    for r in rows:
        cells = []
        for c, w in cols:
            v = r.get(c)
            v = "" if v is None else v
            cells.append(f"{str(v)[:w]:<{w}}")
        print(" ".join(cells))
    extra = [r for r in rows if r.get("exc_first")]
    if extra:
        print("\nfirst exception per sample:")
        for r in extra:
            print(f"  {r['sample']}/{r['variant']}: {r['exc_first']}")


def parent_main(a):
    out_dir = os.path.abspath(a.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    where = {}  # sample file -> its folder (samples/compiled, and the probe's own extra samples)
    for folder in a.samples.split(os.pathsep):
        folder = os.path.abspath(folder)
        for f in os.listdir(folder) if os.path.isdir(folder) else []:
            if f.endswith(".py") and not f.startswith("_"):
                where.setdefault(f, folder)
    files = sorted(where)
    if a.only:
        want = {s.strip().removesuffix(".py") for s in a.only.split(",") if s.strip()}
        files = [f for f in files if f[:-3] in want]
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    tasks = []
    for v in variants:  # variants in order: the first (default) variant of every sample runs first
        for f in files:
            tasks.append((os.path.join(where[f], f), v, os.path.join(out_dir, f"{f[:-3]}__{v}.json")))
    deadline = time.time() + a.deadline
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _kill_children_and_exit)
    tmp_root = tempfile.mkdtemp(prefix="cgprobe_")
    print(f"[probe] {len(tasks)} runs ({len(files)} samples x {variants}), jobs={a.jobs}, "
          f"timeout={a.timeout}s, deadline={a.deadline}s, out={out_dir}", flush=True)
    results = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            futs = {ex.submit(run_child, t, a, deadline, tmp_root): t for t in tasks}
            for fut in concurrent.futures.as_completed(futs):
                t = futs[fut]
                try:
                    res = fut.result()
                except Exception as e:  # noqa: BLE001
                    res = {"sample": os.path.basename(t[0])[:-3], "variant": t[1], "status": "probe_error",
                           "probe_errors": [{"where": "parent", "error": repr(e)}]}
                results[(t[0], t[1])] = res
                print(f"[probe] {os.path.basename(t[0])[:-3]}/{t[1]}: {res.get('status')} "
                      f"({res.get('wall_s', '?')} s)", flush=True)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    rows = [summarize(results[(t[0], t[1])]) for t in tasks if (t[0], t[1]) in results]
    env = next((r.get("env") for r in results.values() if r.get("env")), None)
    _write_json_atomic(os.path.join(out_dir, "summary.json"),
                       {"schema": SCHEMA, "env": env, "rows": rows,
                        "args": {k: v for k, v in vars(a).items()}})
    print()
    if env:
        print(f"torch {env.get('torch')}  cuda_available={env.get('cuda_available')}  "
              f"device={env.get('device_name', '-')}  triton={env.get('triton')}  "
              f"cuda-bindings={env.get('cuda_bindings')}")
        if not env.get("cuda_available"):
            print("NOTE: no CUDA on this machine: CUDA graph trees never run; only compile-time behaviour, "
                  "counters and CPU-side logs are observable.")
    print_table(rows)
    print("\ncolumns: skips=counters[inductor][cudagraph_skips]; partitions=counters[inductor][cudagraph_partitions]; "
          "cg_warn_logs=WARNING records on *cudagraph* loggers; warns=Python warnings mentioning CUDAGraph; "
          "fns/graphs=tree functions/CUDAGraphNodes; symint_keys=cudagraphify_impl cache keys; "
          "rec_logs='Recording function=' DEBUG records (captures); rerec_logs='Re-recording' DEBUG records (one per "
          "mismatching candidate node, over-counts); graph_share=GPU activities launched by cudaGraphLaunch "
          "in the profiled steady iterations")
    return 0


def summarize_dir(out_dir):
    rows, env = [], None
    order = {"default": 0, "nopartition": 1, "dynamo_cudagraphs": 2}
    for f in sorted(os.listdir(out_dir)):
        if not f.endswith(".json") or f == "summary.json" or f.endswith(".trace.json"):
            continue
        with open(os.path.join(out_dir, f)) as fh:
            res = json.load(fh)
        env = env or res.get("env")
        rows.append(summarize(res))
    rows.sort(key=lambda r: (order.get(r["variant"], 9), r["sample"] or ""))
    _write_json_atomic(os.path.join(out_dir, "summary.json"), {"schema": SCHEMA, "env": env, "rows": rows})
    print_table(rows)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", nargs="?")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--samples", default=os.pathsep.join([os.path.join(here, "..", "..", "samples", "compiled"),
                                                         os.path.join(here, "samples")]),
                   help="sample folders, separated by the path separator (the repo's samples/compiled, then the "
                        "probe's extra samples)")
    p.add_argument("--only", default="")
    p.add_argument("--variants", default="default")
    p.add_argument("--warmup", type=int, default=None, help="default 3, or the sample's PROBE_ITERATIONS")
    p.add_argument("--steady", type=int, default=None, help="default 8, or the sample's PROBE_ITERATIONS")
    p.add_argument("--profile-iters", type=int, default=3)
    p.add_argument("--timeout", type=float, default=120.0, help="per sample run, seconds")
    p.add_argument("--deadline", type=float, default=540.0, help="whole run, seconds")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--compile-threads", type=int, default=None,
                   help="TORCHINDUCTOR_COMPILE_THREADS for children (default: 1 when jobs > 1)")
    p.add_argument("--entry", default="step")
    p.add_argument("--summarize-only", action="store_true",
                   help="rebuild summary.json and the table from the JSON files already in OUT_DIR")
    p.add_argument("--keep-traces", action="store_true")
    p.add_argument("--no-keep-graph", action="store_true",
                   help="do not force keep_graph=True on the trees' CUDAGraphs (raw graphs then unreadable)")
    # child-only
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--variant", default="default", help=argparse.SUPPRESS)
    p.add_argument("--json", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-timeout", type=float, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        import faulthandler
        faulthandler.enable()
        if a.child_timeout:
            # dump every thread's stack shortly before the parent kills us
            faulthandler.dump_traceback_later(max(5.0, a.child_timeout - 8), exit=False)
        try:
            faulthandler.register(signal.SIGTERM, all_threads=True, chain=False)
        except Exception:  # noqa: BLE001
            pass
        Child(a).run()
        return 0
    if not a.out_dir:
        p.error("OUT_DIR is required")
    if a.summarize_only:
        return summarize_dir(a.out_dir)
    if a.jobs is None:
        a.jobs = max(1, min(6, (os.cpu_count() or 2) // 2))
    if a.compile_threads is None and a.jobs > 1:
        a.compile_threads = 1
    return parent_main(a)


if __name__ == "__main__":
    sys.exit(main())
