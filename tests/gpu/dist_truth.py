"""The truth of tests/gpu/test_distributed_gpu.py: a standalone probe of the facts cgtool's distributed support relies on (plain torch, no cgtool), run by
torchrun on the GPU machine:

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/gpu/dist_truth.py OUT_DIR [fail]

Each rank writes OUT_DIR/probe.rank<r>.json: NCCL version, whether all_reduce captures inside
torch.cuda.graph and replays with the right sum, the kernel names of the graph's nodes (through
cuda-bindings, as cgtool reads them), is_current_stream_capturing() on the capturing stream and on
another one. With `fail`, the last rank makes its capture fail (a synchronize inside capture) and the
file says how that showed (exception type and message) while the other ranks go on to replay: the
others must be stopped by the launcher or by the process group's timeout (20 s here), never hang.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

from truth_common import finish, record_error


def kernel_names(graph) -> list[str]:
    """Node kinds, and kernel names from the driver (cuFuncGetName, then cuKernelGetName), as cgtool reads them."""
    from cuda.bindings import driver as drv

    handle = int(graph.raw_cuda_graph())
    count = drv.cuGraphGetNodes(handle, 0)[-1]
    nodes = drv.cuGraphGetNodes(handle, count)[1][:count] if count else []
    names = []
    for node in nodes:
        _, kind = drv.cuGraphNodeGetType(node)
        if int(kind) == int(drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL):
            _, kp = drv.cuGraphKernelNodeGetParams(node)
            err, raw = drv.cuFuncGetName(kp.func)
            if int(err) != 0 or not raw:
                err, raw = drv.cuKernelGetName(kp.kern)
            names.append(raw.decode(errors="replace") if int(err) == 0 and raw else "<unnamed kernel>")
        else:
            names.append(str(kind).rsplit(".", 1)[-1])
    return names


def main() -> None:
    import torch
    import torch.distributed as dist

    out_dir, fail = sys.argv[1], "fail" in sys.argv[2:]
    os.makedirs(out_dir, exist_ok=True)
    rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    res: dict = {"rank": rank, "world": world, "env": {k: os.environ.get(k) for k in (
        "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING")}}
    path = os.path.join(out_dir, f"probe{'_fail' if fail else ''}.rank{rank}.json")

    def save() -> None:
        with open(path, "w") as fh:
            json.dump(res, fh, indent=1, default=str)

    t0 = time.time()
    try:
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", timeout=timedelta(seconds=20))
        res["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        x = torch.full((1024,), float(rank + 1), device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                dist.all_reduce(x.clone())
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        other = torch.cuda.Stream()
        g = torch.cuda.CUDAGraph(keep_graph=True)
        res["phase"] = "capture"
        save()
        try:
            with torch.cuda.graph(g, stream=s):
                res["capturing_on_capture_stream"] = torch.cuda.is_current_stream_capturing()
                with torch.cuda.stream(other):
                    res["capturing_on_other_stream"] = torch.cuda.is_current_stream_capturing()
                y = x * 1
                if fail and rank == world - 1:
                    torch.cuda.synchronize()
                dist.all_reduce(y)
            res["captured"] = True
        except Exception as exc:  # noqa: BLE001
            res["captured"] = False
            res["capture_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            res["t_s"] = round(time.time() - t0, 2)
            save()
            sys.stdout.flush()
            os._exit(1)
        try:
            res["graph_nodes"] = kernel_names(g)
        except Exception as exc:  # noqa: BLE001 - the names are a bonus; the replay check still runs
            res["graph_nodes"] = [f"<unreadable: {type(exc).__name__}: {exc}>"]
        res["phase"] = "replay"
        save()
        g.instantiate() if hasattr(g, "instantiate") else None
        x.fill_(float(rank + 10))
        g.replay()
        torch.cuda.synchronize()
        want = sum(r + 10 for r in range(world))
        res["replay_sum"] = float(y[0].item())
        res["replay_ok"] = res["replay_sum"] == want
        res["phase"] = "done"
    except Exception:  # noqa: BLE001
        record_error(res)
    finish(res, t0, save)


if __name__ == "__main__":
    main()
