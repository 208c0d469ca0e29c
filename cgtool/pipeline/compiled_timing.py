"""A compiled step timed three ways with bench's measurement (bench/measure.py): uncompiled eager, torch.compile
without CUDA graphs, and as the script compiled it. The other two are the script loaded again with torch.compile
replaced while it loads and sets up: by the identity (eager: the original module or function, as OptimizedModule
._orig_mod would give, decorated functions included), or by torch.compile with the CUDA-graph part taken out (mode
"reduce-overhead" → default, "max-autotune" → "max-autotune-no-cudagraphs", options["triton.cudagraphs"] → False,
backend "cudagraphs" → "aot_eager"). Also what observing costs: the steady step with and without the observer."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cgtool.model.compiled import CompiledRun
from cgtool.model.job import MeasureSettings
from cgtool.model.phase_log import PhaseLog
from cgtool.script.contract import ScriptRaised, load_script
from cgtool.script.session import ScriptSession

EAGER, NO_GRAPHS = "eager", "compiled"
WARMUP = 3


@contextmanager
def compile_replaced(kind: str) -> Iterator[None]:
    import torch

    orig = torch.compile

    def replaced(model: Any = None, **kwargs: Any) -> Any:
        if kind == EAGER:
            return model if model is not None else (lambda fn: fn)
        return orig(model, **without_cudagraphs(kwargs)) if model is not None else orig(**without_cudagraphs(kwargs))

    torch.compile = replaced
    try:
        yield
    finally:
        torch.compile = orig


def without_cudagraphs(kwargs: dict[str, Any]) -> dict[str, Any]:
    out = dict(kwargs)
    mode = out.get("mode")
    if mode == "reduce-overhead":
        out.pop("mode")
    elif mode == "max-autotune":
        out["mode"] = "max-autotune-no-cudagraphs"
    if isinstance(out.get("options"), dict) and "triton.cudagraphs" in out["options"]:
        out["options"] = {**out["options"], "triton.cudagraphs": False}
    if out.get("backend") == "cudagraphs":
        out["backend"] = "aot_eager"
    return out


def _variant(session: ScriptSession, kind: str) -> Callable[[], None]:
    """The step of the script loaded again under compile_replaced(kind), set up and warmed up. The eager variant
    also runs with dynamo off: code compiled when an imported module was first imported stays compiled."""
    import torch

    from cgtool.trace.compile_watch import dynamo_off

    script = session.script
    with compile_replaced(kind):
        other = ScriptSession(load_script(script.path, script.entry, *script.names), session.device)
        other.setup()
    inputs = other.inputs(0)

    def step() -> None:
        if kind == EAGER:
            with dynamo_off():
                other.call(inputs)
        else:
            other.call(inputs)

    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    return step


def time_three_ways(session: ScriptSession, run: CompiledRun, budget_s: float) -> None:
    """`session`: the script as compiled, set up and run already (its state is the one timed)."""
    import torch

    from cgtool.bench.measure import Prepared, measure
    from cgtool.bench.result import BenchResult

    script = session.script
    inputs = session.inputs(0)

    def as_compiled() -> None:
        session.call(inputs)

    settings = MeasureSettings(budget_s=budget_s, target=0.02, min_time_s=min(1.0, budget_s / 2))
    try:
        for _ in range(WARMUP):
            as_compiled()
        others = {EAGER: _variant(session, EAGER)}
        cached = sorted({f"{os.path.basename(s.file)}:{s.line}" for s in run.sites
                         if s.phase == "load" and os.path.abspath(s.file) != os.path.abspath(script.path)})
        if cached:  # compiled when their module was imported: loading the script again does not compile them anew
            run.notes.append(f"not timed without CUDA graphs: {', '.join(cached)} compiled at import time in another "
                             "module, which a reload of the script does not compile again")
        else:
            others[NO_GRAPHS] = _variant(session, NO_GRAPHS)
        blocks = []
        for name, fn in others.items():
            prep = Prepared({"eager": fn, "replay": as_compiled}, torch.cuda.current_stream(), 0.0, 0.0, 0)
            r = BenchResult.from_rounds(measure(prep, settings, PhaseLog()), script=script.path, entry=script.entry)
            run.timings_us[name] = round(r.eager.gpu.median, 2)
            run.timings_us.setdefault("cudagraphs", round(r.replay.gpu.median, 2))
            blocks.append(f"{r.eager.gpu.n}+{r.replay.gpu.n}")
        which = " and ".join(("eager", "torch.compile without CUDA graphs")[:len(blocks)])
        run.timing_method = (f"bench's measurement, {len(blocks)} run(s) ({' and '.join(blocks)} blocks): {which} "
                             "against the step as compiled; CUDA events, median per step")
        run.observe_cost = observe_cost(as_compiled)
    except Exception as exc:
        e = exc.exc if isinstance(exc, ScriptRaised) else exc  # the script's own exception, as the note names it
        run.notes.append(f"timing stopped: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")


def observe_cost(step: Callable[[], None], n: int = 30, rounds: int = 5) -> float:
    """Steady-state wall time per step with the observer's hooks on, over the time without them (median of
    alternating rounds)."""
    import statistics

    import torch

    from cgtool.capture.trees import TreesObserver

    def per_step() -> float:
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n

    on, off = [], []
    for _ in range(rounds):
        off.append(per_step())
        with TreesObserver(keep_graph=False):
            on.append(per_step())
    return round(statistics.median(on) / statistics.median(off), 3)
