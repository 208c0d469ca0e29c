"""Plain PyTorch's view of a compiled script, for the GPU tests (run in a fresh process: `python compiled_truth.py
SCRIPT [STEPS]`): the script loaded as a module, setup once, the step called STEPS times with inputs(i), then what
torch itself says: the CUDAGraph Trees' graphs (tree nodes), CUDA captures (CUDAGraph.capture_begin calls: the
trees' manager makes one empty capture of its own for its memory pool), the graph breaks torch logs with their
file:line (the `graph_breaks` artifact, as TORCH_LOGS=graph_breaks shows them), dynamo's graphs and its
cudagraph skips. Prints one JSON line. No cgtool code runs here."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys


def main() -> None:
    path = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 14  # as many calls as cgtool makes: 3 + 8 + 3 profiled
    sys.path.insert(0, os.path.dirname(path))
    import logging
    import re

    import torch
    from torch._dynamo.utils import counters

    captures = [0]
    begin = torch.cuda.graphs.CUDAGraph.capture_begin

    def capture_begin(self, *args, **kwargs):
        captures[0] += 1
        return begin(self, *args, **kwargs)

    torch.cuda.graphs.CUDAGraph.capture_begin = capture_begin
    breaks: set[str] = set()

    class Breaks(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            m = re.search(r"in user code at (.+):(\d+)\s*$", record.getMessage().splitlines()[0])
            if m:
                breaks.add(f"{os.path.abspath(m.group(1))}:{m.group(2)}")

    torch._logging.set_logs(graph_breaks=True)
    logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks").addHandler(Breaks())

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
    print(json.dumps({"torch": torch.__version__, "tree_graphs": graphs, "captures": captures[0],
                      "break_lines": sorted(breaks),
                      "graph_breaks": sum(counters["graph_break"].values()),
                      "unique_graphs": int(counters["stats"]["unique_graphs"]),
                      "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"])}))


if __name__ == "__main__":
    main()
