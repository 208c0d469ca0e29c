"""--modules DEPTH: which submodules of the step's model(s) capture on their own, and what graphing them gives.

The CPU analysis first attributes its error findings to modules (pipeline/module_map.py); on the GPU each
remaining module, top-down, is graphed on its own from the arguments of its call in the last warmup step
(capture/module_graphs.py: make_graphed_callables for a training call, forward-only capture otherwise). A module
inside one already graphed is not tried again. Then the step runs with the graphed modules swapped in: replay
versus eager from identical state, and bench's timing."""

from __future__ import annotations

import dataclasses
from typing import Any

from cgtool.model.job import PartialSettings
from cgtool.model.partial import FAILED, FAILS, GRAPHED, MEASURED, NOT_CALLED, SKIPPED, ModuleEntry, ModuleMap
from cgtool.model.phase_log import PhaseLog
from cgtool.script.contract import Script


def run_modules(script: Script, settings: PartialSettings, progress: PhaseLog) -> ModuleMap:
    import torch

    from cgtool.capture.compare_runs import compare_steps, inputs_label
    from cgtool.capture.module_graphs import installed
    from cgtool.pipeline.module_check import find_diverging
    from cgtool.pipeline.module_map import ModuleWatch, WatchedModules, cpu_module_map
    from cgtool.pipeline.piecewise_job import time_prepared

    depth, n_warm, size = 1 if settings.modules is None else settings.modules, settings.warmup, settings.size
    progress.phase("module-map", f"CPU analysis, modules to depth {depth}")
    try:
        cpu_map, _, _ = cpu_module_map(script, depth, n_warm)
        cpu = {e.path: e for e in cpu_map.modules}
    except Exception as exc:  # the map still runs on the GPU, without the CPU's reasons
        cpu, cpu_note = {}, f"CPU analysis failed ({type(exc).__name__}: {exc}); "
    else:
        cpu_note = ""
    watch = ModuleWatch(keep_calls=True)
    watched = WatchedModules(watch, depth)
    session = watched.session(script, torch.device("cuda"), size)
    stream = session.set_up_and_warm(n_warm, progress, "modules", f"{n_warm} eager iterations, module calls watched",
                                     around=watch)
    if not watched.modules:
        return ModuleMap(FAILED, depth, note="setup() returned no nn.Module (the map needs the model among setup's values)")
    state = session.setup()
    entries, graphed = _graph_from_identical_state(state, watched.modules, cpu, stream, progress)
    plain = session.with_script(script)  # the step unwatched: the map is made
    static = plain.inputs(n_warm)
    index, steps = n_warm + 1, settings.check_steps
    fresh = plain.inputs_from(index, steps)
    label = inputs_label(script, index, steps)

    def eager(inputs: Any = static) -> Any:
        return plain.call(inputs)

    def graphed_step(chosen: list[Any]) -> Any:
        def run(inputs: Any = static) -> Any:
            with installed(chosen):
                return plain.call(inputs)
        return run

    def check(chosen: list[Any]) -> Any:
        return compare_steps(state, eager, graphed_step(chosen), fresh, stream, label, what="step with graphed modules")

    replay = timings = tried_replay = None
    chosen = graphed
    phase = "replay-check"
    try:
        if graphed and settings.replay_check:
            progress.phase("replay-check", "step with the graphed modules vs eager")
            replay = check(graphed)
            if replay.status == "mismatch":
                progress.phase("replay-check", "one graphed module at a time, to find the one that differs")
                tried_replay = replay
                entries, chosen, replay = find_diverging(entries, graphed, tried_replay, check, watched.modules)
                if chosen == graphed:  # no single module differs alone: the whole set's check stands
                    replay, tried_replay = tried_replay, None
                else:
                    entries, chosen, replay, more = inside_diverging(
                        entries, chosen, replay, check, watched.modules,
                        lambda under: _graph_from_identical_state(state, under, cpu, stream, progress))
                    graphed = graphed + more
        if chosen and settings.timing:
            from cgtool.bench.measure import Prepared

            phase = "timing"
            progress.phase("timing", "eager vs graphed modules")
            prep = Prepared({"eager": eager, "replay": graphed_step(chosen)}, stream, 0.0, 0.0, 0)
            timings = time_prepared(prep, script, settings, "the step with graphed modules", state)
    except Exception as exc:  # the step with the graphs swapped in failed: the map itself stays
        import traceback

        from cgtool.script.errors import error_record

        traceback.print_exc()
        paths = tuple(g.path for g in chosen)
        return ModuleMap(FAILED, depth, tuple(entries), paths, replay, timings, error_record(phase, exc), note=(
            cpu_note + f"the step with {', '.join(paths)} graphed failed in the {phase}; the map above stands"))
    fallbacks = sorted({f for g in graphed for f in g.fallbacks})
    note = cpu_note + ("; ".join(fallbacks) if fallbacks else "")
    paths, tried = tuple(g.path for g in chosen), tuple(g.path for g in graphed)
    return ModuleMap(MEASURED, depth, tuple(entries), paths, replay, timings, note=note,
                     tried=tried if paths != tried else (), tried_replay=tried_replay)


def inside_diverging(entries: list[ModuleEntry], chosen: list[Any], replay: Any, check: Any, modules: list[Any],
                     graph: Any) -> tuple[list[ModuleEntry], list[Any], Any, list[Any]]:
    """The modules inside a diverging one (skipped while it was graphed whole) graphed in its place (`graph(under)`
    -> (their entries, the graphed ones)): added to the set when the step still matches eager, else the ones that
    differ are named too. -> (entries, the recommended set, its replay check, the modules newly graphed)."""
    from cgtool.model.partial import DIVERGES
    from cgtool.pipeline.module_check import find_diverging

    diverging = [e.path for e in entries if e.status == DIVERGES]
    under = [w for w in modules if any(w.path.startswith(p + ".") for p in diverging)]
    if not under:
        return entries, chosen, replay, []
    sub_entries, more = graph(under)
    if not more:
        return entries, chosen, replay, []
    by = {e.path: e for e in sub_entries}
    entries = [by.get(e.path, e) for e in entries]
    bigger = chosen + more
    whole = check(bigger)
    if whole.status == "match":
        return entries, bigger, whole, more
    marked, kept, kept_replay = find_diverging(entries, bigger, whole, check, modules)
    if kept == bigger or kept_replay is None or kept_replay.status != "match":  # no better set found: keep the first
        marked, kept, kept_replay = (marked if kept != bigger else entries), chosen, replay
    new = {g.path for g in more} - {g.path for g in kept}
    return [dataclasses.replace(e, status=SKIPPED, reason="captured; left out: the recommended set with it added "
                                "differs from eager") if e.path in new and e.status == GRAPHED else e
            for e in marked], kept, kept_replay, more


def _graph_from_identical_state(state: Any, modules: list[Any], cpu: dict[str, ModuleEntry], stream: Any,
                                progress: PhaseLog) -> tuple[list[ModuleEntry], list[Any]]:
    """Graph the modules, then put back what capture itself moved (make_graphed_callables' warmup iterations run
    the module: BatchNorm's running stats, a call counter), so the step continues from the state warmup left."""
    from cgtool.capture.host_state import SavedState

    start = SavedState.of(state)
    try:
        return _graph_modules(modules, cpu, stream, progress)
    finally:
        try:
            start.restore()
        except Exception:  # a capture that spoilt CUDA: nothing more runs on it
            pass


def _graph_modules(modules: list[Any], cpu: dict[str, ModuleEntry], stream: Any,
                   progress: PhaseLog) -> tuple[list[ModuleEntry], list[Any]]:
    """Top-down: graph each module not inside a graphed one; stop trying once a failed capture spoilt CUDA."""
    import torch

    from cgtool.capture.harness import capture_error
    from cgtool.capture.module_graphs import describe_call, graph_module

    entries: list[ModuleEntry] = []
    # modules whose only findings are library ones the GPU has to confirm are tried last (their capture may fail and
    # spoil CUDA for the rest); one that holds other modules of the map is not tried itself: its modules are
    deferred = {w.path for w in modules if w.path in cpu and cpu[w.path].status == FAILS and library_only(cpu[w.path])}
    holders = {w.path for w in modules if w.path in deferred and any(x.path.startswith(w.path + ".") for x in modules)}
    order = [w for w in modules if w.path not in deferred] + [w for w in modules if w.path in deferred]
    graphed: list[Any] = []
    done: list[str] = []
    spoilt = ""
    for w in order:
        name = type(w.module).__name__
        base = cpu.get(w.path)
        parent = next((p for p in done if w.path.startswith(p + ".")), None)
        if parent is not None:
            entries.append(ModuleEntry(w.path, name, w.depth, SKIPPED, f"inside `{parent}`, which graphs whole"))
        elif w.total == 0 or w.last is None:
            entries.append(ModuleEntry(w.path, name, w.depth, NOT_CALLED, w.never_called()))
        elif w.path in holders and base is not None:
            entries.append(ModuleEntry(w.path, name, w.depth, SKIPPED, f"CPU finding, not confirmed on the GPU: "
                                       f"{base.reason}; its modules are tried on their own instead", base.findings))
        elif base is not None and base.status == FAILS and not library_only(base):
            entries.append(ModuleEntry(w.path, name, w.depth, FAILS, base.reason + " (CPU analysis; not captured "
                                       "on the GPU, where a failed capture can spoil the CUDA context)", base.findings))
        elif w.calls > 1:
            entries.append(ModuleEntry(w.path, name, w.depth, SKIPPED, f"called {w.calls} times per step; one graphed "
                                       "callable holds one call's inputs and outputs"))
        elif spoilt:
            entries.append(ModuleEntry(w.path, name, w.depth, SKIPPED, spoilt))
        else:
            progress.phase("module-capture", w.path)
            unconfirmed = f"CPU finding, not confirmed on the GPU: {base.reason}" if base and base.status == FAILS else ""
            try:
                g = graph_module(w.module, w.last, stream)
                torch.cuda.synchronize()
            except Exception as exc:
                record = capture_error(exc)
                where = record.user_frame
                at = f" at line {where.line} (`{where.source.strip()}`)" if where else ""
                cpu_too = f"; the CPU analysis found {base.reason}" if unconfirmed and base else ""
                entries.append(ModuleEntry(w.path, name, w.depth, FAILS, f"{record.label}{record.message}{at}{cpu_too}",
                                           base.findings if base else (), w.last.grad, call=describe_call(w.last)))
                spoilt = _context_state()
                continue
            g.path = w.path
            graphed.append(g)
            done.append(w.path)
            entries.append(ModuleEntry(w.path, name, w.depth, GRAPHED, unconfirmed, base.findings if unconfirmed and base
                                       else (), g.training, g.kernels, describe_call(w.last)))
    rank = {w.path: i for i, w in enumerate(modules)}
    return sorted(entries, key=lambda e: rank[e.path]), graphed


def library_only(entry: ModuleEntry) -> bool:
    """The CPU's findings in the module are all inside library code and none is a sync or a stream hazard (which
    would break the capture and can spoil the CUDA context): the GPU capture decides, the finding stays beside it."""
    return bool(entry.findings) and all(f.library and f.category != "sync" and not f.rule.startswith("CG2")
                                        for f in entry.findings)


def _context_state() -> str:
    """'' when CUDA still works after a failed capture, else why the modules after it are not tried."""
    import torch

    try:
        torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        return ""
    except Exception as exc:
        return f"not tried: CUDA failed after an earlier module's capture ({type(exc).__name__})"
