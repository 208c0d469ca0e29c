"""`cgtool bench` in the worker: per size, warm up, capture once, then time eager and replay adaptively."""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from cgtool.errors import CgtoolError
from cgtool.report import ErrorRecord
from cgtool.worker import Progress

if TYPE_CHECKING:
    from cgtool.bench.adaptive import AdaptiveResult


# Measure at least this long before calling a run converged: the host's slow spells last seconds, and a run
# that converges within one of them (0.25 s on the MLP sample) would have no full-speed block to compare with.
MIN_TIME_S = 2.0


def bench_job(job: dict[str, Any], progress: Progress) -> dict[str, Any]:
    from cgtool import __version__
    from cgtool.bench.result import BenchReport
    from cgtool.harness import CaptureFailed
    from cgtool.jobs import script_error
    from cgtool.script import ScriptRaised, load_script

    settings = job["settings"]
    results, errors = [], []
    try:
        progress.phase("load", job["script"])
        script = load_script(job["script"], job["entry"])
        import torch

        if not torch.cuda.is_available():
            raise CgtoolError("cgtool bench needs a CUDA device; none is visible to torch here. "
                              "`cgtool capture` and `cgtool lint` still analyse the script on CPU.", 3)
        torch.cuda.init()
        sizes = settings.get("sizes") or [None]
        if sizes != [None] and not script.accepts_size():
            raise CgtoolError(f"--sizes needs setup(device, size) or inputs(i, device, size) in {job['script']}; "
                              "neither takes a `size` parameter.")
        for size in sizes:
            try:
                results.append(bench_one(script, size, settings, progress))
            except ScriptRaised as exc:
                errors.append(script_error(exc))
            except CaptureFailed as failed:
                errors.append(failed.record)
                break  # the CUDA context is unusable after a failed capture
    except CgtoolError as exc:
        errors.append(ErrorRecord("load", "usage" if exc.exit_code == 2 else "environment", exc.message))
    except ScriptRaised as exc:
        errors.append(script_error(exc))
    except SystemExit as exc:
        errors.append(ErrorRecord(progress.current or "load", "SystemExit", f"the script called sys.exit({exc.code!r})"))
    except Exception as exc:  # keep the sizes measured so far; the traceback goes to the output
        import traceback

        traceback.print_exc()
        errors.append(ErrorRecord(progress.current or "load", type(exc).__name__, str(exc).strip()[:2000]))
    return BenchReport(tuple(results), dict(settings), tuple(errors), __version__).to_json()


@dataclass
class Prepared:
    """A captured step ready to time: the eager and replay callables on their stream."""

    fns: dict[str, Callable[[], None]]
    stream: Any
    capture_ms: float
    instantiate_ms: float
    pool_bytes: int


def prepare(script: Any, size: int | None, settings: dict[str, Any], progress: Progress) -> Prepared:
    """setup, warmup on a side stream, capture once, instantiate."""
    import torch

    from cgtool.harness import capture, instantiate, warmup
    from cgtool.script import ScriptRaised

    device = torch.device("cuda")
    label = f"size={size}" if size is not None else ""
    progress.phase("setup", label)
    try:
        state = script.call_setup(device, size)
    except Exception as exc:
        raise ScriptRaised("setup", exc) from None
    stream = torch.cuda.Stream()
    n_warm = int(settings.get("warmup", 3))
    progress.phase("warmup", f"{n_warm} iterations {label}".strip())
    warmup(script, state, device, n_warm, stream, size=size)
    try:
        static_inputs = script.call_inputs(n_warm, device, size)
    except Exception as exc:
        raise ScriptRaised("inputs", exc) from None
    progress.phase("capture", label)
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    captured = capture(script, state, static_inputs, stream, "global")
    pool_bytes = max(0, torch.cuda.memory_reserved() - reserved)
    inst_ms = instantiate(captured)

    def eager() -> None:
        script.call_step(state, static_inputs)

    return Prepared({"eager": eager, "replay": captured.graph.replay}, stream, captured.capture_ms, inst_ms,
                    pool_bytes)


def measure(prep: Prepared, settings: dict[str, Any], progress: Progress, size: int | None = None) -> AdaptiveResult:
    """Alternating rounds until the CI target (after at least min_time_s), the budget or --iters; GC paused,
    as timeit does; a CPU-speed probe before each block (cgtool.bench.cpu_load)."""
    import torch

    from cgtool.bench.adaptive import Block, run_rounds
    from cgtool.bench.cpu_load import cpu_probe
    from cgtool.bench.timing import calibrate, time_block

    fns, stream = prep.fns, prep.stream
    flush = _l2_flusher() if settings.get("l2_flush") else None
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        with torch.cuda.stream(stream):
            block_ms = float(settings.get("block_ms", 5.0))
            iters = {m: (1 if flush else calibrate(fn, target_ms=block_ms)) for m, fn in fns.items()}

            def measure_round(mode: str) -> Block:
                probe = cpu_probe()  # how fast the CPU runs right now, just before the block
                gpu, wall = time_block(fns[mode], iters[mode], stream, flush)
                return Block({"gpu": [gpu], "wall": [wall]}, iterations=iters[mode], probe_us=probe)

            def on_progress(p: Any) -> None:
                progress.emit(progress=p.to_json(), size=size)

            progress.phase("measure", f"size={size}" if size is not None else "")
            fixed = settings.get("iters")
            return run_rounds(
                measure_round,
                target_rel_ci=None if fixed else float(settings.get("target", 0.01)),
                budget_s=math.inf if fixed else float(settings.get("budget_s", 10.0)),
                min_time_s=float(settings.get("min_time_s", MIN_TIME_S)),
                max_iterations=int(fixed) if fixed else 1_000_000,
                on_progress=on_progress,
            )
    finally:
        if was_enabled:
            gc.enable()


def bench_one(script: Any, size: int | None, settings: dict[str, Any], progress: Progress):
    from cgtool.bench.result import BenchResult
    from cgtool.environment import environment

    prep = prepare(script, size, settings, progress)
    rounds = measure(prep, settings, progress, size)
    floor = kernel_floor_us(prep.fns["replay"])
    return BenchResult.from_rounds(rounds, script=script.path, entry=script.entry, size=size, gpu_floor_us=floor,
                                   capture_ms=prep.capture_ms, instantiate_ms=prep.instantiate_ms,
                                   pool_bytes=prep.pool_bytes, environment=environment())


def _l2_flusher():
    """A callable that evicts the L2 cache by writing a buffer twice its size."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    size = 2 * int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
    buf = torch.empty(size, dtype=torch.uint8, device="cuda")
    return lambda: buf.zero_()


def kernel_floor_us(replay: Any, n: int = 5) -> float | None:
    """Summed GPU kernel time per replay, from torch's profiler (CUPTI); None where it is unavailable.

    For a graph whose kernels run one after another this is the GPU-bound floor; for graphs with
    parallel branches it overstates the floor (kernels overlap), which the docs say.
    """
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                replay()
            torch.cuda.synchronize()
        total = 0.0
        for evt in prof.events():
            if str(getattr(evt, "device_type", "")).endswith("CUDA"):
                total += float(getattr(evt, "device_time", None) or getattr(evt, "cuda_time", 0.0) or 0.0)
        return total / n if total > 0 else None
    except Exception:
        return None
