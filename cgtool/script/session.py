"""The user's script as cgtool drives it: one `ScriptSession` per run of it. Setup once (the device, the size and
rank arguments the contract gives), inputs(i), the step on setup's state, warmup iterations on a stream; what the
script raises leaves as `ScriptRaised` with its phase (error records: script/errors.py `job_error`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from cgtool.script.contract import Args, Script, ScriptRaised


class ScriptSession:
    """`script` run on `device` (at `size`, for a sweep): setup's state once, the inputs and the step on it.

    `state`: setup's state when made already (by another session: the same model, another way of running the
    step). Hooks: `on_setup(state)` hears setup's state as it is made (the module map finds the model there);
    `before_step()` runs before every call of the step (a new iteration of a watch)."""

    def __init__(self, script: Script, device: Any, size: int | None = None, state: Args | None = None,
                 on_setup: Callable[[Args], None] | None = None,
                 before_step: Callable[[], None] | None = None) -> None:
        self.script, self.device, self.size, self.state = script, device, size, state
        self.on_setup, self.before_step = on_setup, before_step

    def with_script(self, script: Script) -> ScriptSession:
        """Another script's step (the step compiled, the unwatched script) on this session's state and inputs."""
        return ScriptSession(script, self.device, self.size, self.state)

    def setup(self) -> Args:
        """setup(device[, size][, rank, world_size]) once: its state (kept), or the state given at the start."""
        if self.state is None:
            try:
                self.state = self.script.call_setup(self.device, self.size)
            except Exception as exc:
                raise ScriptRaised("setup", exc) from None
            if self.on_setup is not None:
                self.on_setup(self.state)
        return self.state

    def inputs(self, i: int) -> Args | None:
        """inputs(i, device[, size]) (None without inputs()); what it raises is ScriptRaised("inputs")."""
        try:
            return self.script.call_inputs(i, self.device, self.size)
        except Exception as exc:
            raise ScriptRaised("inputs", exc) from None

    def inputs_from(self, first: int, steps: int) -> list[Args | None]:
        """inputs(first), ..., inputs(first + steps - 1), all made before any step runs (so making them moves no
        state between two runs that are compared); [None] * steps for a script without inputs()."""
        return [self.inputs(first + k) for k in range(steps)]

    def call(self, inputs: Args | None) -> Any:
        """One call of the step on setup's state; what it raises passes unchanged (a capture reads its chain)."""
        if self.before_step is not None:
            self.before_step()
        return self.script.call_step(self.setup() if self.state is None else self.state, inputs)

    def step(self, inputs: Args | None, phase: str = "step") -> Any:
        """One call of the step; what it raises is ScriptRaised(phase) (warmup, timing, ...)."""
        try:
            return self.call(inputs)
        except ScriptRaised:
            raise
        except Exception as exc:
            raise ScriptRaised(phase, exc) from None

    def warmup(self, n: int, stream: Any, analysis: Any = None) -> None:
        """n eager iterations, inputs(0) .. inputs(n - 1), on `stream` (lazy init, cuBLAS handles and autotuning
        happen here), joined with the current stream after; `analysis` (the GPU tracer) hears each iteration."""
        import torch

        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for i in range(n):
                inputs = self.inputs(i)
                with analysis.iteration(i, inputs) if analysis is not None else nullcontext():
                    self.step(inputs, "warmup")
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()

    def set_up_and_warm(self, n: int, log: Any, setup_note: str, warmup_note: str, around: Any = None) -> Any:
        """setup, then `n` eager warmup iterations on a new side stream (inside the context `around` when given),
        each phase said to `log`; returns the stream."""
        import torch

        log.phase("setup", setup_note)
        self.setup()
        stream = torch.cuda.Stream()
        log.phase("warmup", warmup_note)
        with around if around is not None else nullcontext():
            self.warmup(n, stream)
        return stream
