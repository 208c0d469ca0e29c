"""Read a captured CUDA graph through cuda-bindings' driver API into the plain Graph model.

Kernel names come from the driver (cuFuncGetName): the runtime getter fails for torch's kernels.
Child graphs are read recursively; unknown node types are kept as kind "unknown".
"""

from __future__ import annotations

import os
from typing import Any

from cgtool.graph.model import KIND_BY_TYPE_ID, Graph, GraphNode
from cgtool.graph.names import demangle, short_name

_COPY_KINDS = {0: "HtoH", 1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "default"}


def _ok(res: tuple[Any, ...], what: str) -> Any:
    err = res[0]
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {getattr(err, 'name', err)} ({int(err)})")
    return res[1] if len(res) == 2 else res[1:]


def _bindings() -> tuple[Any, Any]:
    from cuda.bindings import driver, runtime

    return driver, runtime


def read_cuda_graph(handle: int) -> Graph:
    """The graph behind a cudaGraph_t handle (e.g. torch's `CUDAGraph.raw_cuda_graph()`)."""
    reader = _Reader()
    reader.read(int(handle), graph_id=0)
    return Graph(nodes=tuple(reader.nodes), edges=tuple(reader.edges), source="cuda")


class _Reader:
    def __init__(self) -> None:
        self.drv, self.rt = _bindings()
        self.nodes: list[GraphNode] = []
        self.edges: list[tuple[int, int]] = []
        self.next_graph = 1

    def read(self, handle: int, graph_id: int) -> None:
        drv = self.drv
        _, count = _ok(drv.cuGraphGetNodes(handle, 0), "cuGraphGetNodes")
        handles = _ok(drv.cuGraphGetNodes(handle, count), "cuGraphGetNodes")[0][:count] if count else []
        base = len(self.nodes)
        index = {int(h): base + i for i, h in enumerate(handles)}
        pending_children: list[tuple[int, int]] = []
        for i, h in enumerate(handles):
            node = self._node(h, base + i, graph_id)
            if node.kind == "graph":
                child_id = self.next_graph
                self.next_graph += 1
                node = GraphNode(**{**node.__dict__, "child": child_id})
                pending_children.append((h, child_id))
            self.nodes.append(node)
        for frm, to in self._edges(handle):
            self.edges.append((index[int(frm)], index[int(to)]))
        for h, child_id in pending_children:
            sub = _ok(self.rt.cudaGraphChildGraphNodeGetGraph(h), "cudaGraphChildGraphNodeGetGraph")
            self.read(int(sub), child_id)

    def _edges(self, handle: int) -> list[tuple[Any, Any]]:
        drv = self.drv
        fn = getattr(drv, "cuGraphGetEdges_v2", None) or drv.cuGraphGetEdges
        res = fn(handle, 0)
        n = res[-1]
        if not n:
            return []
        res = fn(handle, n)
        _ok((res[0],), "cuGraphGetEdges")
        return list(zip(res[1][:n], res[2][:n]))

    def _node(self, h: Any, node_id: int, graph_id: int) -> GraphNode:
        drv = self.drv
        err, t = drv.cuGraphNodeGetType(h)
        try:
            type_id = int(t) if int(err) == 0 else -1
        except (TypeError, ValueError):
            type_id = -1
        kind = KIND_BY_TYPE_ID.get(type_id, "unknown")
        base: dict[str, Any] = {"id": node_id, "kind": kind, "graph": graph_id}
        try:
            base.update(self._params(h, kind))
        except Exception as exc:  # a node we cannot read must not stop the rest of the graph
            base.setdefault("name", kind)
            base["attrs"] = {"read_error": str(exc)}
        if kind == "unknown":
            base["attrs"] = {**base.get("attrs", {}), "type_id": type_id}
            base.setdefault("name", f"type {type_id}")
        return GraphNode(**base)

    def _params(self, h: Any, kind: str) -> dict[str, Any]:
        drv, rt = self.drv, self.rt
        if kind == "kernel":
            kp = _ok(drv.cuGraphKernelNodeGetParams(h), "cuGraphKernelNodeGetParams")
            mangled = None
            err, raw = drv.cuFuncGetName(kp.func)
            if int(err) == 0 and raw:
                mangled = raw.decode(errors="replace")
            elif int(kp.kern):
                err, raw = drv.cuKernelGetName(kp.kern)
                if int(err) == 0 and raw:
                    mangled = raw.decode(errors="replace")
            mangled = mangled or "<unnamed kernel>"
            return {
                "name": short_name(mangled),
                "mangled": mangled,
                "demangled": demangle(mangled),
                "grid": (int(kp.gridDimX), int(kp.gridDimY), int(kp.gridDimZ)),
                "block": (int(kp.blockDimX), int(kp.blockDimY), int(kp.blockDimZ)),
                "shared_mem": int(kp.sharedMemBytes),
            }
        if kind == "memcpy":
            mp = _ok(rt.cudaGraphMemcpyNodeGetParams(h), "cudaGraphMemcpyNodeGetParams")
            copy = _COPY_KINDS.get(int(mp.kind), str(int(mp.kind)))
            nbytes = int(mp.extent.width) * max(int(mp.extent.height), 1) * max(int(mp.extent.depth), 1)
            return {"name": f"memcpy {copy}", "copy_kind": copy, "bytes": nbytes}
        if kind == "memset":
            ms = _ok(rt.cudaGraphMemsetNodeGetParams(h), "cudaGraphMemsetNodeGetParams")
            nbytes = int(ms.elementSize) * int(ms.width) * max(int(ms.height), 1)
            return {"name": "memset", "bytes": nbytes, "attrs": {"value": int(ms.value)}}
        if kind == "mem_alloc":
            ap = _ok(rt.cudaGraphMemAllocNodeGetParams(h), "cudaGraphMemAllocNodeGetParams")
            return {"name": "mem_alloc", "bytes": int(ap.bytesize)}
        if kind == "host":
            return {"name": "host function"}
        if kind in ("event_record", "event_wait"):
            return {"name": kind.replace("_", " ")}
        if kind == "graph":
            return {"name": "child graph"}
        return {"name": kind.replace("_", " ")}


def write_driver_dot(handle: int, path: str) -> None:
    """The driver's own verbose DOT dump (cudaGraphDebugDotPrint) of the graph to `path`."""
    _, rt = _bindings()
    flags = int(rt.cudaGraphDebugDotFlags.cudaGraphDebugDotFlagsVerbose)
    _ok(rt.cudaGraphDebugDotPrint(int(handle), os.fsencode(path), flags), "cudaGraphDebugDotPrint")


def driver_version() -> str | None:
    """The CUDA driver's version as "13.0", or None without a driver."""
    try:
        drv, _ = _bindings()
        err, v = drv.cuDriverGetVersion()
    except Exception:
        return None
    if int(err) != 0:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"
