"""`cgtool bench`: a careful eager-versus-replay measurement, with sweeps, plots and a CI gate."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from cgtool.commands.common import Number, script_options
from cgtool.commands.bench_options import batch_range, budget, sizes
from cgtool.commands.distributed import nproc_option


@click.command(name="bench", short_help="Careful eager-versus-replay timing, sweeps, CI gate (needs a GPU).")
@script_options
@click.option("--budget-s", type=Number("budget_s"), default=10.0, show_default=True,
              help="Stop measuring after this many seconds per size, converged or not.")
@click.option("--ci", "ci_pct", type=Number("ci"), default=1.0, show_default=True,
              help="Stop once the 95% CI of every median (and of its drift) is within ± this many percent.")
@click.option("--iters", type=Number("iters"), default=None,
              help="Time exactly this many iterations per mode instead (no adaptive stopping).")
@click.option("--l2-flush", is_flag=True, help="Flush the L2 cache before every timed iteration (cold-cache timing).")
@click.option("--sizes", callback=sizes, default=None, metavar="N,N,...",
              help="Sweep: pass size=N to setup/inputs and capture one graph per size; LOW:HIGH doubles from LOW "
              "(LOW, 2*LOW, 4*LOW, ...) and ends with HIGH, LOW:HIGH:STEP a range. Several sizes are also captured into one shared pool, "
              "largest first, on one stream (as vLLM does). ASCII digits; an empty list or entry (1,,2) is a usage error.")
@click.option("--histogram", "histogram_file", type=click.Path(), default=None,
              help="With --sizes: plan which sizes to capture for these batches (JSON {\"batch\": count} or a list).")
@click.option("--batch-range", callback=batch_range, default=None, metavar="LOW:HIGH",
              help="With --sizes: plan for every batch size from LOW to HIGH, equally likely.")
@click.option("--memory-budget", callback=budget, default=None, metavar="SIZE",
              help="The plan's limit on graph memory, e.g. 512MiB or 2GiB (default: none).")
@click.option("--max-sizes", type=Number("max_sizes"), default=None, help="The plan captures at most this many sizes.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Draw speedup and both times against size (.svg, or .png with matplotlib).")
@click.option("--compare", "baseline", type=click.Path(), default=None,
              help="A bench JSON (from --out) to compare with, size by size.")
@click.option("--fail-if-slower", type=Number("fail_if_slower"), default=None, metavar="PCT",
              help="With --compare: exit 1 when replay got slower by more than PCT percent and the CI.")
@click.option("--piecewise", is_flag=True, help="Time the step captured in pieces at its break points instead "
              "(torch.compile backend=\"cudagraphs\") against eager, carefully (docs/partial.md).")
@click.option("--modules", "modules_depth", type=Number("modules"), default=None, metavar="DEPTH",
              help="Time the step with its capturable submodules (to DEPTH) graphed instead (docs/partial.md).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None, help="Write the bench JSON here (a failed or interrupted run never replaces an existing file: it writes "
                   "NAME.failed.json beside it).")
@click.option("--json", "as_json", is_flag=True, help="Print the bench JSON on stdout instead of tables.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write the HTML report here [default: beside --out's JSON, as NAME.html] (docs/html.md).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict (and problems).")
@nproc_option
def bench(target: str, entry: str | None, warmup: int, timeout: float, budget_s: float, ci_pct: float,
          iters: int | None, l2_flush: bool, sizes: list[int] | None, histogram_file: str | None,
          batch_range: tuple[int, int] | None, memory_budget: int | None, max_sizes: int | None,
          plot_path: str | None, baseline: str | None,
          fail_if_slower: float | None, piecewise: bool, modules_depth: int | None, out_file: str | None, as_json: bool,
          html_path: str | None, quiet: bool, nproc: int | None) -> None:
    """Measure eager steps against graph replays of TARGET (script.py or script.py:function).

    \b
    Warm up, capture once, then time eager and replay in alternating rounds (ABBA), each block timed
    with CUDA events (GPU time) and the host clock with a synchronize (wall time). Measuring stops
    when every median's 95% CI is within ±--ci percent (after at least 2 s), or --budget-s runs out;
    the verdict says which. The CIs also span how far the times drifted during the run (batch
    medians), so a machine whose speed wanders shows a wide CI instead of a false ±1%.

    \b
    A pure-Python probe before each block checks that the CPU runs at full speed; blocks run on a
    CPU slowed by other load are left out of the numbers, and a `cpu:` line reports them, counted
    as measured.
    Method and definitions: docs/bench.md.

    \b
    With --piecewise or --modules DEPTH, bench times partial capture instead (the step in pieces, or with
    its capturable submodules graphed) with the same method; the JSON is the partial job's result.
    --sizes, --plot, --compare, --fail-if-slower, --l2-flush and --html are not supported there (a usage error).

    \b
    Exit codes: 0 measured; 1 a size failed, or --fail-if-slower found a regression; 2 usage error;
    3 no CUDA device; 4 the worker crashed or timed out; 130 interrupted.

    \b
    --nproc-per-node N: every rank captures, then times eager and replay in lockstep (6 alternating
    blocks of --iters, default 50, per mode on every rank: adaptive stopping would desynchronise the
    ranks' collectives); --l2-flush applies; the step time is the slowest rank's. Writes the merged
    report to cgtool-out/<stem>/ (docs/distributed.md). --budget-s, --ci (the adaptive stopping rule),
    --out, --plot, --compare, --fail-if-slower and --sizes are not supported on ranks (a usage error).
    """
    from cgtool.commands.common import make_job
    from cgtool.commands.distributed import (capture_distributed, given, ranks_to_start,
                                             refuse_bench_options_on_ranks, refuse_partial_on_ranks, wants_distributed)
    from cgtool.errors import CgtoolError, ExitCode
    from cgtool.model.job import BenchSettings, CaptureSettings, PartialSettings
    from cgtool.script.contract import parse_target

    asked, nproc = nproc, ranks_to_start(nproc, parse_target(target, entry)[0])
    plan_asked = histogram_file is not None or batch_range is not None
    if (memory_budget is not None or max_sizes is not None) and not plan_asked:
        raise CgtoolError("--memory-budget and --max-sizes shape a capture-size plan: add --histogram FILE or "
                          "--batch-range LOW:HIGH (with --sizes).", ExitCode.USAGE)
    if plan_asked and (piecewise or modules_depth is not None or wants_distributed(nproc)):
        raise CgtoolError("A capture-size plan (--histogram, --batch-range) comes from a plain --sizes sweep: not with "
                          "--piecewise, --modules or --nproc-per-node.", ExitCode.USAGE)
    refuse_partial_on_ranks(piecewise, modules_depth, nproc, asked)
    refuse_bench_options_on_ranks(nproc, asked, [o for o, v in (
        ("--out", out_file), ("--plot", plot_path), ("--compare", baseline), ("--fail-if-slower", fail_if_slower),
        ("--sizes", sizes)) if v is not None], [o for o, p in (("--budget-s", "budget_s"), ("--ci", "ci_pct"))
                                               if given(p)])
    if wants_distributed(nproc):
        job = make_job(target, entry, CaptureSettings(warmup=warmup, replay_check=False, checks=False, timing=True,
                                                      timing_per_block=iters or 50, timing_l2_flush=l2_flush))
        capture_distributed(job, nproc, timeout, None, as_json, quiet, html_path)
    if piecewise or modules_depth is not None:
        from cgtool.commands.bench_partial import refuse_unused

        refuse_unused(piecewise, [o for o, v in (("--sizes", sizes), ("--plot", plot_path), ("--compare", baseline), (
            "--fail-if-slower", fail_if_slower), ("--l2-flush", l2_flush or None)) if v is not None])

    histogram = _histogram(histogram_file, batch_range, sizes)
    if fail_if_slower is not None and not baseline:
        raise CgtoolError("--fail-if-slower needs --compare BASELINE.json", ExitCode.USAGE)
    if plot_path and not plot_path.lower().endswith((".svg", ".png")):
        raise CgtoolError(f"--plot takes a .svg or .png file, not {plot_path}", ExitCode.USAGE)
    from cgtool.render.files import check_writable

    from cgtool.render.files import refuse_input
    from cgtool.script.contract import parse_target

    script = parse_target(target, entry)[0]
    if html_path and (piecewise or modules_depth is not None):
        raise CgtoolError("--html draws a plain bench run; with --piecewise or --modules use `cgtool capture "
                          "--piecewise/--modules` (its report.html shows the pieces and the module map).", ExitCode.USAGE)
    if not (piecewise or modules_depth is not None):
        html_path = html_path or html_beside(out_file)
    for path, option in ((out_file, "--out"), (plot_path, "--plot"), (html_path, "--html")):
        if path:
            check_writable(path, option)
            refuse_input(path, option, {script: "the script", **({baseline: "the --compare baseline"} if baseline else {}),
                                        **({out_file: "the --out file"} if option in ("--plot", "--html") and out_file else {})})
    if piecewise or modules_depth is not None:
        from cgtool.commands.bench_partial import bench_partial

        bench_partial(target, entry, timeout, PartialSettings(
            warmup=warmup, budget_s=budget_s, target=ci_pct / 100.0, iters=iters, piecewise=piecewise,
            modules=modules_depth, careful=True), out_file, as_json, quiet)
        return
    base_report = None
    if baseline:
        from cgtool.bench.report_file import read_bench_report

        base_report = read_bench_report(baseline)  # fail early, before minutes of measuring
    job = make_job(target, entry, BenchSettings(warmup=warmup, budget_s=budget_s, target=ci_pct / 100.0, iters=iters,
                                                l2_flush=l2_flush, sizes=tuple(sizes) if sizes else None))
    per_size = budget_s if iters is None else 60.0
    total_timeout = timeout
    if click.get_current_context().get_parameter_source("timeout") == click.core.ParameterSource.DEFAULT:
        total_timeout = max(timeout, 60.0 + len(sizes or [None]) * (per_size + 30.0))  # room for every size
    report, outcome = _run(job, total_timeout, show=not (as_json or quiet))
    plan = None if histogram is None else (histogram, memory_budget, max_sizes)
    finish(report, outcome, base_report, fail_if_slower, plot_path, out_file, as_json, quiet, plan, html_path)


def html_beside(out_file: str | None) -> str | None:
    """NAME.html beside --out's NAME.json: the page bench writes by default (none without --out)."""
    if not out_file:
        return None
    path = os.path.splitext(out_file)[0] + ".html"
    return None if os.path.abspath(path) == os.path.abspath(out_file) else path


def _histogram(path: str | None, batch_range: tuple[int, int] | None, sizes: list[int] | None) -> dict[int, float] | None:
    """The batches the plan is for, from --histogram or --batch-range; None when no plan is asked for."""
    from cgtool.bench.size_inputs import parse_histogram, range_histogram
    from cgtool.errors import CgtoolError, ExitCode

    if path is None and batch_range is None:
        return None
    if path is not None and batch_range is not None:
        raise CgtoolError("--histogram and --batch-range both describe the batches: give one.", ExitCode.USAGE)
    if not sizes or len(sizes) < 2:
        raise CgtoolError("A plan needs the cost of several sizes: add --sizes (e.g. --sizes 1:256).", ExitCode.USAGE)
    if batch_range is not None:
        return range_histogram(*batch_range)
    from cgtool.files.inputs import HISTOGRAM, read_json

    data = read_json(path, HISTOGRAM)  # type: ignore[arg-type]  # the one reader: FIFOs, devices, depth refused
    try:
        return parse_histogram(data)
    except ValueError as exc:
        raise CgtoolError(f"{path}: not a usable histogram: {exc}", ExitCode.USAGE) from None


def _plans(report: Any, plan: Any) -> list[Any]:
    """(label, Plan) rows for the sizes the sweep measured, or [] without a plan or a usable sweep."""
    if plan is None or len([r for r in report.results if r.size is not None]) < 2:
        return []
    from cgtool.bench.size_plan import compare_plans, model_of_report

    histogram, budget, max_sizes = plan
    return compare_plans(model_of_report(report), histogram, float("inf") if budget is None else budget, max_sizes)


def _run(job: Any, timeout: float, show: bool):
    from cgtool.bench.result import BenchReport
    from cgtool.model.report import ErrorRecord
    from cgtool.render.console import console
    from cgtool.worker.client import run_job

    if show:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from cgtool.bench.adaptive import RoundStatus
        from cgtool.render.bench import progress_text

        with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                      console=console(stderr=True), transient=True) as bar:
            task = bar.add_task("starting worker…", total=1.0)

            def on_event(event: dict[str, Any]) -> None:
                size = f"size {event['size']} · " if event.get("size") is not None else ""
                if event.get("phase"):
                    bar.update(task, description=f"{size}{event['phase']} {event.get('detail', '')}".strip(),
                               completed=0)
                if event.get("progress"):
                    p = RoundStatus.from_json(event["progress"])
                    bar.update(task, description=size + progress_text(p), completed=p.fraction)

            outcome = run_job(job, timeout, on_event)
    else:
        outcome = run_job(job, timeout)
    if outcome.result is not None and outcome.result.bench is not None:
        return outcome.result.bench, outcome
    from cgtool import __version__

    err = ErrorRecord(outcome.phase or "worker", outcome.failure or "crash", outcome.message)
    return BenchReport((), dict(job.settings), (err,), __version__), outcome


def finish(report: Any, outcome: Any, base_report: Any, fail_if_slower: float | None, plot_path: str | None,
           out_file: str | None, as_json: bool, quiet: bool, plan: Any = None, html_path: str | None = None) -> None:
    from cgtool.render.bench import render_bench
    from cgtool.render.console import console

    comparison = None
    if base_report is not None and report.results:
        from cgtool.bench.compare import compare

        comparison = compare(report, base_report, pct=fail_if_slower or 0.0)
    plans = _plans(report, plan)
    doc = report.to_json()
    if plans:
        from cgtool.bench.size_plan import model_of_report

        doc["plan"] = {"budget_bytes": plan[1], "memory_model": model_of_report(report).memory_model,
                       "sets": [{"label": label, **p.to_json()} for label, p in plans]}
    data = json.dumps(doc, indent=1) + "\n"
    if as_json:
        sys.stdout.write(data)
    else:
        render_bench(report, console(), comparison, quiet=quiet)  # shown first: a file problem loses nothing
        if plans and not quiet:
            from rich.markup import escape

            from cgtool.render.size_plan import plan_lines, plan_table

            console().print(plan_table(plans, plan[1]))
            for line in plan_lines(plans, model_of_report(report)):
                console().print(escape(line), soft_wrap=True)
    complete = outcome.failure is None and not report.errors and bool(report.results)
    from cgtool.render.files import save_result

    if out_file:  # a failed run never replaces a saved report (a baseline): it goes beside it
        save_result(out_file, data, complete)
    if html_path:  # a failed run never replaces a saved page either
        from cgtool.render.html import render_bench_html

        save_result(html_path, render_bench_html(report, doc.get("plan")), complete)
    if plot_path and report.results:
        from cgtool.bench.plot import plot_plan, plot_sweep

        def write(path: str, data: str | bytes) -> None:
            save_result(path, data, complete)

        if plans:
            plot_plan(report, plans, plot_path, write=write)
        else:
            plot_sweep(report, plot_path, write=write)
    from cgtool.model.exit_codes import bench_exit

    regressed = comparison is not None and fail_if_slower is not None and comparison.regressed(fail_if_slower)
    sys.exit(bench_exit(report.errors, bool(report.results), outcome.failure, regressed))
