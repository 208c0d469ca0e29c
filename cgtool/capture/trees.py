"""Watch torch.compile's CUDAGraph Trees while a compiled step runs: torch's cudagraph log records and
warnings, the cudagraphify closures (symint keys), and the trees' CUDA graphs kept readable (keep_graph=True).
Nothing here changes what torch.compile does: no dispatch or function mode, only a log hook and two wrappers
that call torch's own code (the techniques of the compile probe, docs/research/README.md, checked on an H100 with torch 2.11).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, cast

from cgtool.model.compiled_logs import is_cudagraph_logger
from cgtool.trace.patches import Patches


class TreesObserver:
    """Context manager: install the hooks, collect; `records`, `warnings` and `closures` fill while it is on."""

    def __init__(self, keep_graph: bool = True, call_frame: Any = None) -> None:
        self.keep_graph = keep_graph
        self.call_frame = call_frame  # () -> the user's call into compiled code now running (CompileWatch's)
        self.records: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.closures: list[Any] = []  # the cudagraphify_impl results (their fn_cache maps key -> function)
        self.keep_graph_ok: bool | None = None
        self.iteration: int | None = None
        self._patches = Patches()

    def __enter__(self) -> TreesObserver:
        import torch

        from cgtool.trace import torch_logs

        # INFO/DEBUG of the cudagraphs artifact: recordings, re-record reasons (beside the compile watch's)
        torch_logs.want("cudagraphs")
        self._patches.on_undo(lambda: torch_logs.release("cudagraphs"))
        self._hook_logging()
        self._hook_warnings()
        self._hook_cudagraphify()
        if self.keep_graph:
            self._keep_graphs(torch)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patches.undo_all()

    def _hook_logging(self) -> None:
        from cgtool.trace.torch_logs import keep_records

        def keep(record: logging.LogRecord, logger: str) -> None:
            self.records.append({
                "logger": logger, "level": record.levelname, "iteration": self.iteration,
                "msg": record.msg if isinstance(record.msg, str) else repr(record.msg),
                "args": [str(a) for a in record.args] if isinstance(record.args, tuple) else [],
                "message": record.getMessage()[:20000], "call": self._call()})

        self._patches.on_undo(keep_records(is_cudagraph_logger, keep))

    def _call(self) -> dict[str, Any] | None:
        if self.call_frame is None:
            return None
        frame = self.call_frame()
        return None if frame is None else frame.to_json()

    def _hook_warnings(self) -> None:
        orig = warnings.showwarning
        observer = self
        filters = list(warnings.filters)

        def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            text = str(message)
            if "CUDAGraph" in text:
                observer.warnings.append(text)
            orig(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        warnings.filterwarnings("always", message=".*CUDAGraphs.*")

        def undo() -> None:
            warnings.showwarning = orig
            cast("list[Any]", warnings.filters)[:] = filters  # a list at run time (typeshed: Sequence)

        self._patches.on_undo(undo)

    def _hook_cudagraphify(self) -> None:
        import torch._inductor.cudagraph_trees as cgt

        orig = cgt.cudagraphify_impl
        observer = self

        def cudagraphify_impl(*args: Any, **kwargs: Any) -> Any:
            fn = orig(*args, **kwargs)
            observer.closures.append(fn)
            return fn

        cgt.cudagraphify_impl = cudagraphify_impl  # compile_fx imports it at call time
        self._patches.on_undo(lambda: setattr(cgt, "cudagraphify_impl", orig))

    def _keep_graphs(self, torch: Any) -> None:
        """The trees make CUDAGraph() with keep_graph=False, which frees the cudaGraph_t after instantiation;
        a subclass passes keep_graph=True (through __init__: pybind reads it there), self-tested first."""
        orig = torch.cuda.CUDAGraph

        class CUDAGraph(orig):  # type: ignore[misc,valid-type]
            def __new__(cls, keep_graph: bool = False, *args: Any, **kwargs: Any) -> Any:
                return super().__new__(cls, True, *args, **kwargs)

            def __init__(self, keep_graph: bool = False, *args: Any, **kwargs: Any) -> None:
                super().__init__(True, *args, **kwargs)

        torch.cuda.CUDAGraph = CUDAGraph
        self._patches.on_undo(lambda: setattr(torch.cuda, "CUDAGraph", orig))
        try:
            g, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
            x = torch.ones(8, device="cuda")
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.graph(g, stream=stream):
                y = x * 2
            g.replay()
            torch.cuda.synchronize()
            self.keep_graph_ok = bool(int(g.raw_cuda_graph())) and float(y.sum().item()) == 16.0
        except Exception:
            self.keep_graph_ok = False
        if not self.keep_graph_ok:
            torch.cuda.CUDAGraph = orig


def tree_manager() -> Any:
    """The trees' manager of the current device, or None when torch.compile made no CUDA graph tree."""
    import torch
    import torch._inductor.cudagraph_trees as cgt

    try:
        return cgt.get_container(torch.cuda.current_device()).tree_manager
    except Exception:
        return None


def tree_nodes(mgr: Any) -> list[Any]:
    if mgr is None or getattr(mgr, "roots", None) is None:
        return []
    out, stack = [], [n for nodes in mgr.roots.values() for n in nodes]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(k for kids in node.children.values() for k in kids)
    return sorted(out, key=lambda n: _id(n.id))


def _id(x: Any) -> int:
    return int(getattr(x, "id", x))


def tree_state(mgr: Any) -> dict[str, Any]:
    """Functions with their graph ids and torch's re-record counts (the format model/compiled_logs reads)."""
    if mgr is None:
        return {}
    funcs = {}
    for fid in mgr.ids_to_funcs:
        mode = mgr.id_to_mode.get(fid)
        funcs[_id(fid)] = {"function_id": _id(fid), "name": mgr.get_func_name(fid),
                           "mode": getattr(mode, "name", str(mode)),
                           "compile_id": str(mgr.id_to_compile_id.get(fid)), "graph_ids": []}
    for node in tree_nodes(mgr):
        f = funcs.get(_id(node.wrapped_function.id))
        if f is not None:
            f["graph_ids"].append(_id(node.id))
    rerecord = {str(_id(g) if g is not None else None): {str(_id(f)): int(n) for f, n in per.items()}
                for g, per in mgr.num_rerecord.items()}
    return {"functions": list(funcs.values()), "num_rerecord": rerecord}


def symint_keys(closures: list[Any]) -> list[dict[str, Any]]:
    """Each cudagraphify closure's fn_cache: key (symints / int inputs) → the tree function made for it."""
    out = []
    for fn in closures:
        cells = dict(zip(fn.__code__.co_freevars if hasattr(fn, "__code__") else (),
                         getattr(fn, "__closure__", None) or ()))
        try:
            cache = cells["fn_cache"].cell_contents
        except (KeyError, ValueError):
            continue
        out.append({"keys": [{"key": None if k is None or k == () else str(k), "function_id": _function_id(v)}
                             for k, v in cache.items()]})
    return out


def _function_id(obj: Any, depth: int = 0) -> int | None:
    import functools

    if depth > 6 or obj is None:
        return None
    if isinstance(obj, functools.partial):
        if "function_id" in (obj.keywords or {}):
            return _id(obj.keywords["function_id"])
        return _function_id(obj.func, depth + 1)
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            found = _function_id(cell.cell_contents, depth + 1)
        except ValueError:
            continue
        if found is not None:
            return found
    return None


def pool_memory_of(mgr: Any) -> tuple[int, int] | None:
    """(reserved, allocated) bytes of the trees' private pool, or None without a trees manager."""
    from cgtool.capture.memory import pool_memory

    if mgr is None:
        return None
    return pool_memory(mgr.cuda_graphs_thread_pool)


__all__ = ["TreesObserver", "pool_memory_of", "symint_keys", "tree_manager", "tree_nodes", "tree_state"]
