"""Plain PyTorch's verdict on one step, for tests/gpu/test_sync_table_gpu.py: run a script in the cgtool contract
(setup/inputs/step) with torch.cuda.set_sync_debug_mode("warn") for three warmup steps, then capture it with
torch.cuda.graph. One process per script: a failed capture poisons the process.

    python3 tests/gpu/capture_truth.py SCRIPT.py     # prints one JSON line: {"sync": ..., "capture": ...}

"sync": null, or the first sync debug warning of the second or third step with the script's line (a sync in the
first step only, as an optimizer creating its state, is "first_step_sync": capture never runs it); "capture": "ok"
or the capture error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
import warnings

import torch


def _line(exc: BaseException, path: str) -> int | None:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == path]
    return lines[-1] if lines else None


def _watched_step(mod, args: dict, path: str) -> dict | None:
    """One step under sync debug mode "warn" (not "error": an error inside an optimizer's state initialization
    would leave half its state behind, as ASGD's, and break the next step): the first sync's line, or None."""
    hits: list[dict] = []

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001 - warnings' hook
        if "synchronizing CUDA operation" in str(message) and not hits:
            lines = [f.lineno for f in traceback.extract_stack() if os.path.abspath(f.filename) == path]
            hits.append({"line": lines[-1] if lines else None, "error": str(message).splitlines()[0][:200]})

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        saved, warnings.showwarning = warnings.showwarning, show
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("warn")
        try:
            mod.step(**args)
        finally:
            torch.cuda.set_sync_debug_mode(0)
            warnings.showwarning = saved
    return hits[0] if hits else None


def main(path: str) -> dict:
    path = os.path.abspath(path)
    spec = importlib.util.spec_from_file_location("truth_step", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    device = torch.device("cuda")
    state = mod.setup(device) or {}
    out: dict = {"script": os.path.basename(path), "sync": None, "capture": None}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            hit = _watched_step(mod, {**state, **mod.inputs(i, device)}, path)
            if i == 0:
                out["first_step_sync"] = hit  # one-time work (an optimizer's state) that capture never sees
            else:
                out["sync"] = out["sync"] or hit  # every step: what the captured step would run
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    args = {**state, **mod.inputs(3, device)}
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            mod.step(**args)
        out["capture"] = "ok"
    except Exception as exc:  # noqa: BLE001 - the capture's outcome is the answer
        out["capture"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        out["capture_line"] = _line(exc, path)
    return out


if __name__ == "__main__":
    try:
        result = main(sys.argv[1])
    except Exception as exc:  # noqa: BLE001
        result = {"script": os.path.basename(sys.argv[1]), "failed": f"{type(exc).__name__}: {str(exc)[:300]}"}
    print(json.dumps(result), flush=True)
