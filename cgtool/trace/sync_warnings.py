"""GPU run: torch.cuda.set_sync_debug_mode("warn") warnings become SYNC_WARNING records at the user's line, and
autograd's AccumulateGrad stream-mismatch warning an ACCUMULATE_GRAD_WARNING record at the `.backward()` line."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from cgtool.model.trace import ACCUMULATE_GRAD_WARNING, SYNC_WARNING, OpRecord

SYNC_WARNING_TEXT = "called a synchronizing CUDA operation"
# torch/csrc/autograd (2.4+): a reused AccumulateGrad node runs on the stream it was made on (warned once a process)
ACCUMULATE_GRAD_TEXT = "The AccumulateGrad node's stream does not match"


def sync_warnings_start(t: Any) -> None:
    """Sync debug mode "warn" on for the Tracer `t`; its warnings become SYNC_WARNING records at the user's line."""
    try:
        t.saved_sync_mode = torch.cuda.get_sync_debug_mode()
        t.warnings_ctx = warnings.catch_warnings()  # filters and showwarning come back on stop
        t.warnings_ctx.__enter__()
        warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype")
        torch.cuda.set_sync_debug_mode("warn")
        warnings.filterwarnings("always", message=SYNC_WARNING_TEXT)
        warnings.filterwarnings("always", message=ACCUMULATE_GRAD_TEXT)
        t.saved_showwarning = original = warnings.showwarning

        def showwarning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                        line: Any = None) -> None:
            if SYNC_WARNING_TEXT in str(message) and t.ops is not None:
                inner, outer = t.where(1)
                if inner >= 0:  # not the harness's own, nor inputs() made inside the iteration
                    t.ops.append(OpRecord(SYNC_WARNING, "cuda-sync", frame=inner, outer=outer))
                return
            if ACCUMULATE_GRAD_TEXT in str(message) and t.ops is not None:
                inner, outer = t.where(1)  # the user's `.backward()` (the engine hands its warnings to the caller)
                t.ops.append(OpRecord(ACCUMULATE_GRAD_WARNING, "AccumulateGrad", frame=inner, outer=outer))
                return
            original(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning
    except Exception as exc:  # noqa: BLE001
        t.fail(exc)


def sync_warnings_stop(t: Any) -> None:
    """The sync debug mode, warning filters and showwarning as they were."""
    try:
        if t.saved_showwarning is not None:
            warnings.showwarning = t.saved_showwarning
            t.saved_showwarning = None
        if t.saved_sync_mode is not None:
            torch.cuda.set_sync_debug_mode(t.saved_sync_mode)
        ctx, t.warnings_ctx = getattr(t, "warnings_ctx", None), None
        if ctx is not None:
            ctx.__exit__(None, None, None)
    except Exception as exc:  # noqa: BLE001
        t.fail(exc)
