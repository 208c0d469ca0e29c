"""What the plain-PyTorch truth scripts of the GPU suite share (tests/gpu/*_truth.py, plan_probe.py): load a sample
as a module, name its state's tensors, end a rank's probe. Plain Python and torch only, never cgtool: the truths are
what cgtool is checked against. Each truth runs as `python tests/gpu/X_truth.py ...`, so this folder is first on
its path and `from truth_common import ...` finds this file."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any


def load(path: str, name: str = "sample") -> ModuleType:
    """The script at `path` imported as module `name` (its module-level code runs), as cgtool loads a script."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tensors_of(state: dict[str, Any]) -> dict[str, Any]:
    """Every state tensor, named: parameters and buffers of modules, optimizer state, plain tensors."""
    import torch

    out = {}
    for name, v in state.items():
        if isinstance(v, torch.nn.Module):
            out.update({f"{name}.{k}": t for k, t in v.state_dict(keep_vars=True).items()})
        elif isinstance(v, torch.optim.Optimizer):
            for j, st in enumerate(v.state.values()):
                out.update({f"{name}.state[{j}].{k}": t for k, t in st.items() if isinstance(t, torch.Tensor)})
        elif isinstance(v, torch.Tensor):
            out[name] = v
    return out


def record_error(res: dict[str, Any]) -> None:
    """Inside a rank probe's `except`: the traceback's tail as the result's error."""
    res["error"] = traceback.format_exc()[-1500:]


def finish(res: dict[str, Any], t0: float, save: Callable[[], None]) -> None:
    """End a rank probe: its time, its file written, exit 0 or 1 by whether it recorded an error — at once
    (os._exit: no process-group teardown that could hang after another rank failed)."""
    res["t_s"] = round(time.time() - t0, 2)
    save()
    sys.stdout.flush()
    os._exit(0 if "error" not in res else 1)


def side_stream_warmup(mod: ModuleType, state: dict[str, Any], device: Any, iterations: int = 3) -> Any:
    """The documented recipe's warmup: `iterations` steps (inputs 0, 1, ...) on a side stream that waited for the
    current one, joined back and synchronized; returns the side stream, to capture on."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(iterations):
            mod.step(**state, **mod.inputs(i, device))
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    return side


def replay_with(graph: Any, static: dict[str, Any], inp: dict[str, Any]) -> None:
    """One replay of `graph` on the inputs `inp`, copied into its static input tensors first, then synchronized."""
    import torch

    with torch.no_grad():
        for name, t in static.items():
            t.copy_(inp[name])
    graph.replay()
    torch.cuda.synchronize()
