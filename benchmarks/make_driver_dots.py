"""Write real driver DOT files on a GPU machine: a 1,000-block model and a graph with every node kind.

Needs torch with CUDA and cuda-bindings. Usage: python benchmarks/make_driver_dots.py OUT_DIR
The files feed tests/data/ (small ones) and benchmarks/dot_parse.py (the 3,000-node one).
"""

from __future__ import annotations

import ctypes
import os
import sys
import traceback

import torch
from cuda.bindings import driver as drv
from cuda.bindings import runtime as rt

ALL_FLAGS = 0xFFFF  # every runtime and driver flag up to CONDITIONAL_NODE_PARAMS (32768)


def check(res, what: str = ""):
    err = res[0]
    if int(err) != 0:
        raise RuntimeError(f"{what}: {err!r}")
    return res[1] if len(res) == 2 else res[1:]


def dump(graph, path: str, flags: int) -> None:
    check(drv.cuGraphDebugDotPrint(graph, os.fsencode(path), flags), f"dot print {path} flags={flags}")
    print(f"wrote {path} ({os.path.getsize(path)} bytes, flags={flags})")


def model_blocks(out: str, blocks: int = 1000) -> None:
    """x = relu(x @ w + b), `blocks` times: 3 kernels a block (gemm, add, relu)."""
    torch.manual_seed(0)
    x = torch.randn(32, 64, device="cuda")
    ws = [torch.randn(64, 64, device="cuda") * 0.1 for _ in range(blocks)]
    bs = [torch.randn(64, device="cuda") for _ in range(blocks)]

    def step():
        y = x
        for w, b in zip(ws, bs):
            y = torch.relu(torch.mm(y, w) + b)
        return y

    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    g.enable_debug_mode()
    with torch.cuda.graph(g):
        step()
    g.debug_dump(os.path.join(out, f"model{blocks}_debug_dump.dot"))
    print("debug_dump done")
    raw = g.raw_cuda_graph()
    dump(raw, os.path.join(out, f"model{blocks}_flags0.dot"), 0)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _host_fn(_user_data):  # never runs: the graph is only dumped, not launched
    pass


def kinds_graph(out: str) -> None:
    """Stream-capture memset, memcpy (3 directions), mem alloc/free, events, host fn, a kernel;
    then add a child graph, an empty node and IF/WHILE conditionals by hand."""
    s = torch.cuda.Stream()
    cs = s.cuda_stream
    dev = torch.zeros(1 << 16, device="cuda")
    dev2 = torch.zeros(1 << 16, device="cuda")
    host = torch.zeros(1 << 16, pin_memory=True)
    nbytes = dev.numel() * 4
    ev = check(rt.cudaEventCreate(), "event")
    torch.cuda.synchronize()
    check(rt.cudaStreamBeginCapture(cs, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed), "begin")
    check(rt.cudaMemsetAsync(dev.data_ptr(), 0, nbytes, cs), "memset")
    check(rt.cudaMemcpyAsync(dev.data_ptr(), host.data_ptr(), nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, cs), "h2d")
    with torch.cuda.stream(s):
        dev.mul_(2.0)
    check(rt.cudaMemcpyAsync(dev2.data_ptr(), dev.data_ptr(), nbytes, rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, cs), "d2d")
    check(rt.cudaMemcpyAsync(host.data_ptr(), dev2.data_ptr(), nbytes, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, cs), "d2h")
    try:
        ptr = check(rt.cudaMallocAsync(4096, cs), "mallocAsync")
        check(rt.cudaMemsetAsync(ptr, 1, 4096, cs), "memset2")
        check(rt.cudaFreeAsync(ptr, cs), "freeAsync")
    except Exception:
        traceback.print_exc()
    try:
        check(rt.cudaEventRecordWithFlags(ev, cs, 1), "event record external")
        check(rt.cudaStreamWaitEvent(cs, ev, 1), "event wait external")
    except Exception:
        traceback.print_exc()
    try:
        fnptr = ctypes.cast(_host_fn, ctypes.c_void_p).value
        check(rt.cudaLaunchHostFunc(cs, rt.cudaHostFn_t(fnptr), 0), "host fn")
    except Exception:
        traceback.print_exc()
    graph = check(rt.cudaStreamEndCapture(cs), "end")

    try:
        child = check(rt.cudaGraphCreate(0), "child create")
        mp = rt.cudaMemsetParams()
        mp.dst, mp.value, mp.elementSize, mp.width, mp.height, mp.pitch = dev2.data_ptr(), 0, 1, 1024, 1, 0
        m = check(rt.cudaGraphAddMemsetNode(child, None, 0, mp), "child memset")
        check(rt.cudaGraphAddEmptyNode(child, [m], 1), "child empty")
        check(rt.cudaGraphAddChildGraphNode(graph, None, 0, child), "child node")
    except Exception:
        traceback.print_exc()
    try:
        check(rt.cudaGraphAddEmptyNode(graph, None, 0), "empty")
    except Exception:
        traceback.print_exc()
    for ctype in ("cudaGraphCondTypeIf", "cudaGraphCondTypeWhile"):
        try:
            handle = check(rt.cudaGraphConditionalHandleCreate(graph, 0, 1), "cond handle")
            p = rt.cudaGraphNodeParams()
            p.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
            p.conditional.handle = handle
            p.conditional.type = getattr(rt.cudaGraphConditionalNodeType, ctype)
            p.conditional.size = 1
            try:
                p.conditional.ctx = check(drv.cuCtxGetCurrent(), "ctx")
            except Exception:
                traceback.print_exc()
            check(rt.cudaGraphAddNode(graph, None, None, 0, p), f"cond {ctype}")
            body = p.conditional.phGraph_out[0]
            mp = rt.cudaMemsetParams()
            mp.dst, mp.value, mp.elementSize, mp.width, mp.height, mp.pitch = dev.data_ptr(), 0, 1, 256, 1, 0
            check(rt.cudaGraphAddMemsetNode(body, None, 0, mp), "body memset")
        except Exception:
            traceback.print_exc()
    for name, flags in (("kinds_flags0.dot", 0), ("kinds_verbose.dot", 1), ("kinds_all.dot", ALL_FLAGS)):
        try:
            dump(graph, os.path.join(out, name), flags)
        except Exception:
            traceback.print_exc()


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    print(torch.__version__, torch.cuda.get_device_name())
    for job in (kinds_graph, model_blocks):
        try:
            job(out)
        except Exception:
            traceback.print_exc()


if __name__ == "__main__":
    main()
