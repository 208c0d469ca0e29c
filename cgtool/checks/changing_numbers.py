"""The words of a Python number that changes between iterations (CG402, kind python-number): by where it comes from
and what it does, each with the fix that works for it. A position indexing a tensor (a KV cache's write slot): index
with a device tensor. A value the user writes into a tensor in the step (`fill_`): do that before each replay.

Python numbers from torch.optim: what a learning-rate scheduler inside the step does to a graph (CG402, CG302).

A scheduler sets the optimizer's learning rate (and OneCycleLR/CyclicLR its momentum or betas) from Python. With a
float learning rate the optimizer passes that number to its kernels (`param.add_(grad, alpha=-lr)`); with a tensor
one the scheduler writes it with `fill_(value)` or scales it by a factor computed on the host. Either way the graph
keeps the number it saw at capture and replays it at every step. What works: the changing value as a tensor the graph
reads (`lr=torch.tensor(..., device=device)`, capturable=True: Adam, AdamW) with the scheduler stepped between
replays, or the optimizer step left out of the graph. SGD reads a tensor learning rate on the host (`alpha=-lr`:
CG404 says so), so it cannot take one in a graph. A schedule computed on the device from the tensor alone (StepLR
with step_size=1: `lr * gamma` at every step) runs the same ops at every step and is not reported.
"""

from __future__ import annotations

from cgtool.checks.common import library_place
from cgtool.model.trace import OpRecord, Trace

SCHEDULER = "torch/optim/lr_scheduler.py"
OPTIM = "torch/optim/"

SCHEDULER_HINT = ("Step the scheduler outside the captured step, after each replay (`graph.replay(); "
                  "scheduler.step()`): with a tensor learning rate on the device (`lr=torch.tensor(1e-3, "
                  "device=device)` and capturable=True: Adam, AdamW) it writes the new value into that tensor, and the "
                  "graph reads it.")
OPTIMIZER_HINT = ("Make the changing value a tensor the graph reads: `lr=torch.tensor(1e-3, device=device)` with "
                  "capturable=True (Adam, AdamW), and step the scheduler outside the captured step, after each replay. "
                  "Where that cannot be (SGD reads a tensor learning rate on the host; OneCycleLR and CyclicLR cycle "
                  "momentum or betas as Python numbers, and cycle_momentum=False keeps them fixed), capture forward and "
                  "backward only and run the optimizer step eagerly after each replay.")
IN_PLACE_HINT = ("Move this update out of the captured step: run it before each replay, where it writes the new value "
                 "into the tensor the graph reads.")
IN_PLACE_CALLS = frozenset({"Tensor.fill_", "Tensor.copy_", "Tensor.zero_"})
INDEX_HINT = ("Index with a device tensor the graph reads, updated before each replay: `cache.index_copy_(1, pos, "
              "value)` with `pos` a device tensor input (as transformers' StaticCache takes `cache_position`), "
              "`torch.index_select(x, dim, pos)` to read.")
INDEX_CALLS = frozenset({"Tensor.__setitem__", "Tensor.__getitem__", "Tensor.select", "Tensor.narrow",
                         "torch.select", "torch.narrow"})


def optim_source(trace: Trace, op: OpRecord | None) -> str | None:
    """"scheduler" when torch.optim.lr_scheduler issued the op, "optimizer" for another torch.optim file, else None."""
    from cgtool.trace.frame_table import short_path

    lib = trace.frame(op.lib) if op is not None else None
    path = short_path(lib.file.replace("\\", "/")) if lib is not None else ""
    if not path.startswith(OPTIM):
        return None
    return "scheduler" if path == SCHEDULER else "optimizer"


def changing_number(trace: Trace, op: OpRecord, changes: str, source: str | None) -> tuple[str, str]:
    """(message, hint) for a Python number passed to `op` that changes between iterations (`changes`: "0.05 then
    0.025"), in the words of where it came from (`source`: optim_source's answer for `op`)."""
    lib = trace.frame(op.lib)
    where = f" in {library_place(lib)}" if lib is not None else ""
    if source == "scheduler":
        return (f"the learning-rate scheduler passes a Python number that changes between iterations to `{op.name}` "
                f"({changes}){where}: the graph keeps the value from capture and replays it at every step, so the "
                "schedule does not move as it does in eager", SCHEDULER_HINT)
    if source == "optimizer":
        return (f"the optimizer passes a Python number that changes between iterations to `{op.name}` ({changes})"
                f"{where}: a hyperparameter set from Python (a scheduler's learning rate, momentum or betas, or a "
                "param_group value set by hand); the graph keeps the value from capture", OPTIMIZER_HINT)
    hint = IN_PLACE_HINT if op.name in IN_PLACE_CALLS else INDEX_HINT if op.name in INDEX_CALLS else (
        "Keep the value in a device tensor and update it in place (buf.fill_(v) or buf.copy_(...)) before each "
        "replay.")
    return (f"the Python number passed to `{op.name}` changes between iterations ({changes}): the graph keeps the "
            "value from capture", hint)

