"""Plain PyTorch's view of a compiled script, for the GPU tests (run in a fresh process: `python compiled_truth.py
SCRIPT [STEPS]`): the script loaded as a module, setup once, the step called STEPS times with inputs(i), then what
torch itself says — CUDAGraph Trees graphs recorded, dynamo's graph-break count and graphs, Triton kernels in the
trees' graphs' names when readable. Prints one JSON line. No cgtool code runs here."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys


def main() -> None:
    path = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    sys.path.insert(0, os.path.dirname(path))
    import torch
    from torch._dynamo.utils import counters

    spec = importlib.util.spec_from_file_location("truth_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    device = torch.device("cuda")
    state = mod.setup(device) if hasattr(mod, "setup") else {}
    params = inspect.signature(mod.step).parameters
    out = None
    for i in range(steps):
        inputs = mod.inputs(i, device) if hasattr(mod, "inputs") else {}
        kwargs = dict(state) if isinstance(state, dict) else {}
        kwargs.update(inputs if isinstance(inputs, dict) else {})
        args = list(state) if isinstance(state, tuple) else []
        out = mod.step(*args, **{k: v for k, v in kwargs.items() if k in params or not args})
        torch.cuda.synchronize()
    del out
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
    except Exception:
        graphs = -1
    print(json.dumps({"torch": torch.__version__, "tree_graphs": graphs,
                      "graph_breaks": sum(counters["graph_break"].values()),
                      "unique_graphs": int(counters["stats"]["unique_graphs"]),
                      "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"])}))


if __name__ == "__main__":
    main()
