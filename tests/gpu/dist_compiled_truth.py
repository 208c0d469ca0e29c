"""Plain PyTorch's view of a compiled distributed sample, per rank (no cgtool), as a user would check it:

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/gpu/dist_compiled_truth.py SAMPLE OUT_DIR [STEPS]

Each rank: the sample's setup/inputs/step called STEPS times (as many calls as cgtool makes), then what torch itself
says on that rank: CUDAGraph Trees' graphs (tree nodes), CUDA captures (CUDAGraph.capture_begin calls), the graph
breaks torch logs with file:line (the `graph_breaks` artifact), its cudagraph skip messages, dynamo's graphs and
counters; the losses of the steps (finite or not) and the wall time of the last steps. OUT_DIR/compiled.rank<r>.json.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import logging
import os
import re
import sys
import time
import traceback
from datetime import timedelta


def call(fn, **available):
    names = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in available.items() if k in names})


def main() -> None:
    import torch
    import torch.distributed as dist
    from torch._dynamo.utils import counters

    sample, out_dir = os.path.abspath(sys.argv[1]), sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 14
    os.makedirs(out_dir, exist_ok=True)
    rank, world, local_rank = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    res: dict = {"rank": rank, "pid": os.getpid(), "sample": os.path.basename(sample), "phase": "start"}
    path = os.path.join(out_dir, f"compiled.rank{rank}.json")
    captures = [0]
    begin = torch.cuda.graphs.CUDAGraph.capture_begin

    def capture_begin(self, *args, **kwargs):
        captures[0] += 1
        return begin(self, *args, **kwargs)

    torch.cuda.graphs.CUDAGraph.capture_begin = capture_begin
    breaks: set[str] = set()
    skips: list[str] = []

    class Logs(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            m = re.search(r"in user code at (.+):(\d+)\s*$", text.splitlines()[0]) if text else None
            if m:
                breaks.add(f"{m.group(1)}:{m.group(2)}")
            if "skipping cudagraphs" in text:
                skips.append(text.splitlines()[0][:300])

    torch._logging.set_logs(graph_breaks=True, cudagraphs=True, perf_hints=True)
    handler = Logs()  # torch's artifact loggers do not propagate: each one that carries what we count
    for name in ("torch", "torch._dynamo.symbolic_convert.__graph_breaks", "torch._inductor.cudagraph_utils.__cudagraphs",
                 "torch._inductor.cudagraph_trees.__cudagraphs", "torch._inductor.cudagraph_utils.__perf_hints"):
        logging.getLogger(name).addHandler(handler)
    t0 = time.time()
    try:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", timeout=timedelta(seconds=90))
        sys.path.insert(0, os.path.dirname(sample))
        spec = importlib.util.spec_from_file_location("sample", sample)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        dev = torch.device("cuda")
        ids = dict(device=dev, rank=rank, world_size=world)
        state = call(mod.setup, **ids)
        losses, times = [], []
        res["phase"] = "steps"
        for i in range(steps):
            t = time.perf_counter()
            out = mod.step(**state, **call(mod.inputs, i=i, **ids))
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
            losses.append(float(out) if isinstance(out, torch.Tensor) and out.numel() == 1 else None)
        res["losses"] = losses
        res["finite"] = all(v is not None and v == v and abs(v) < 1e30 for v in losses)
        res["last_steps_ms"] = round(1000 * sum(times[-4:]) / 4, 3)
        res["phase"] = "done"
    except Exception:  # noqa: BLE001
        res["error"] = traceback.format_exc()[-2000:]
    graphs = 0
    try:
        import torch._inductor.cudagraph_trees as cgt

        mgr = cgt.get_container(torch.cuda.current_device()).tree_manager
        if mgr is not None and mgr.roots is not None:
            stack = [n for nodes in mgr.roots.values() for n in nodes]
            while stack:
                node = stack.pop()
                graphs += 1
                stack.extend(k for kids in node.children.values() for k in kids)
    except Exception:  # noqa: BLE001
        graphs = -1
    res.update({"torch": torch.__version__, "tree_graphs": graphs, "captures": captures[0],
                "break_lines": sorted(breaks), "graph_breaks": sum(counters["graph_break"].values()),
                "break_reasons": sorted(counters["graph_break"])[:20],
                "unique_graphs": int(counters["stats"]["unique_graphs"]),
                "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]), "skip_messages": skips[:10],
                "t_s": round(time.time() - t0, 2)})
    with open(path, "w") as fh:
        json.dump(res, fh, indent=1, default=str)
    sys.stdout.flush()
    os._exit(0 if "error" not in res else 1)


if __name__ == "__main__":
    main()
