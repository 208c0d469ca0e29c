"""Record dynamo's own graph-break and recompile records (the compile watch's `records`) for the samples with
breaks and a varying batch, as test fixtures: `python tests/gpu/record_dynamo.py [cpu]`. On the GPU (the default)
it writes $OUT/graph_breaks_gpu.json (the compiled code runs as the samples compile it); with `cpu` it writes
tests/data/compile/graph_breaks_cpu.json (backend "eager", as `cgtool lint` does on the CPU). Paths are stored with
the repository root as ROOT/. Prints the record count per sample as one JSON line."""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
NAMES = ["break_item", "break_branch", "break_print", "varying_batch"]


def main() -> None:
    import torch

    from cgtool.script.contract import load_script
    from cgtool.trace.compile_watch import CompileWatch

    cpu = sys.argv[1:] == ["cpu"]
    device = torch.device("cpu" if cpu else "cuda")
    out = {"torch": torch.__version__, "device": str(device), "runs": {}}
    for name in NAMES:
        torch._dynamo.reset()
        with CompileWatch(backend="eager" if cpu else None) as watch:
            script = load_script(os.path.join(ROOT, "samples", "compiled", f"{name}.py"), "step")
            state = script.call_setup(device)
            watch.phase = "step"
            for i in range(4 if cpu else 11):
                watch.iteration = i
                script.call_step(state, script.call_inputs(i, device))
            if not cpu:
                torch.cuda.synchronize()
        records = []
        for r in watch.records:
            r = dict(r, message=r["message"].replace(ROOT + "/", "ROOT/"))
            if r.get("call"):
                r["call"] = dict(r["call"], file=r["call"]["file"].replace(ROOT + "/", "ROOT/"))
            records.append(r)
        out["runs"][name] = records
    path = os.path.join(ROOT, "tests", "data", "compile", "graph_breaks_cpu.json") if cpu else \
        os.path.join(os.environ.get("OUT") or "/tmp", "graph_breaks_gpu.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: len(v) for k, v in out["runs"].items()}))


if __name__ == "__main__":
    main()
