"""How many nodes the graph being captured on the current stream holds: read before each op of the capture, it
tells which graph nodes each op made (cgtool/model/node_profile.py). Reading adds nothing to the graph."""

from __future__ import annotations

from typing import Callable


def capture_node_counter() -> Callable[[], int]:
    """A function giving the node count of the graph the current CUDA stream captures into, -1 when it is not
    capturing or the count cannot be read; after one failure it stops asking (cuda-bindings is imported on the
    first call, which only a capturing op makes)."""
    state: dict = {}

    def count() -> int:
        if state.get("off"):
            return -1
        try:
            if "rt" not in state:
                import torch
                from cuda.bindings import driver, runtime

                state.update(rt=runtime, drv=driver, stream=torch.cuda.current_stream)
            res = state["rt"].cudaStreamGetCaptureInfo(state["stream"]().cuda_stream)
            if int(res[0]) != 0 or int(res[1]) != 1:  # cudaStreamCaptureStatusActive
                return -1
            got = state["drv"].cuGraphGetNodes(res[3], 0)
            return int(got[-1]) if int(got[0]) == 0 else -1
        except Exception:  # noqa: BLE001 - the count is a nicety: never break the user's op
            state["off"] = True
            return -1

    return count
