"""Plain PyTorch's answer for a one-GPU sample whose backward may reuse AccumulateGrad nodes (no cgtool):

    python tests/gpu/accumulate_grad_truth.py SAMPLE OUT_JSON [same|own]

setup; 3 warmup iterations on a side stream s; `torch.cuda.graph` on s ("same", as cgtool captures) or on its own
stream ("own", PyTorch's documented recipe); then replay against eager from the same state on fresh inputs. Every
warning with its phase and file:line; the capture's error and the frames it names. One JSON object to OUT_JSON.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
import warnings


def main() -> None:
    import torch

    sample, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "same"
    res: dict = {"sample": os.path.basename(sample), "mode": mode, "phase": "load", "warnings": []}
    warnings.simplefilter("always")

    def show(message, category, filename, lineno, file=None, line=None):
        res["warnings"].append({"phase": res["phase"], "category": category.__name__, "message": str(message)[:200],
                                "where": f"{os.path.basename(filename)}:{lineno}"})

    warnings.showwarning = show
    try:
        spec = importlib.util.spec_from_file_location("sample", sample)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        dev = torch.device("cuda")
        res["phase"] = "setup"
        state = mod.setup(dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        res["phase"] = "warmup"
        with torch.cuda.stream(s):
            for i in range(3):
                mod.step(**state, **mod.inputs(i, dev))
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        static = mod.inputs(3, dev)
        g = torch.cuda.CUDAGraph()
        res["phase"] = "capture"
        try:
            with torch.cuda.graph(g, **({"stream": s} if mode == "same" else {})):
                static_out = mod.step(**state, **static)
            res["captured"] = True
        except Exception as exc:  # noqa: BLE001
            res["captured"] = False
            res["capture_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            res["error_frames"] = [f"{os.path.basename(f.filename)}:{f.lineno}"
                                   for f in traceback.extract_tb(exc.__traceback__)]
            res["sample_line"] = next((f.lineno for f in reversed(traceback.extract_tb(exc.__traceback__))
                                       if os.path.abspath(f.filename) == sample), None)
            return
        res["phase"] = "replay"
        params = list(state["model"].parameters())
        start = [p.detach().clone() for p in params]
        fresh = mod.inputs(4, dev)

        def restore() -> None:
            with torch.no_grad():
                for p, p0 in zip(params, start):
                    p.copy_(p0)
                static["x"].copy_(fresh["x"])
            torch.cuda.synchronize()

        restore()
        with torch.cuda.stream(s):
            eager_out = mod.step(**state, **static).clone()
        torch.cuda.synchronize()
        eager_params = [p.detach().clone() for p in params]
        restore()
        g.replay()
        torch.cuda.synchronize()
        res["replay_ok"] = bool(torch.allclose(eager_out, static_out)) and all(
            torch.allclose(a, b) for a, b in zip(eager_params, params))
    except Exception:  # noqa: BLE001
        res["error"] = traceback.format_exc()[-1500:]
    finally:
        with open(out, "w") as fh:
            json.dump(res, fh, indent=1)
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
