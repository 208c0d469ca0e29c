"""Run one script the way the GPU harness does (traced warmup on a side stream, traced capture, stream
calls watched) and print the trace's findings and the capture's outcome as JSON. Used by test_trace.py
on a CUDA machine; one process per script because a failed capture poisons the process."""

import json
import os
import sys

import torch

from cgtool.checks import run_checks
from cgtool.trace.cuda_watch import watch_cuda_calls
from cgtool.script.contract import load_script
from cgtool.trace.tracer import Tracer


def main(path: str) -> None:
    script = load_script(path)
    device = torch.device("cuda")
    state = script.call_setup(device)
    tracer = Tracer()
    side = torch.cuda.Stream()
    out = {"capture": "ok"}
    with tracer, watch_cuda_calls(tracer.stream_event):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(3):
                inputs = script.call_inputs(i, device)
                with tracer.iteration(i, inputs=inputs):
                    script.call_step(state, inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        inputs = script.call_inputs(3, device)
        try:
            with tracer.iteration("capture"):
                with torch.cuda.graph(graph, stream=side):
                    script.call_step(state, inputs)
        except Exception as exc:  # noqa: BLE001
            out["capture"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            frame = tracer.last_user_frame()
            out["culprit"] = frame and [os.path.basename(frame.file), frame.line]
    capture = [op for it in tracer.trace.iterations if it.phase == "capture" for op in it.ops]
    out["capturing_ops"] = sum(1 for op in capture if op.capturing)
    out["tracer_error"] = tracer.trace.tracer_error
    out["findings"] = [[f.rule, os.path.basename(f.file or "?"), f.line, f.severity] for f in run_checks(tracer.trace)]
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
