"""`cgtool capture`: warm up, capture one iteration, read the graph, check replay, time it."""

from __future__ import annotations

import os
import sys
import tempfile

import click

from cgtool.commands.common import Number, exit_code_for, make_job, progress, script_options
from cgtool.commands.distributed import nproc_option
from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.job import CHECK_STEPS


@click.command(name="capture", short_help="Warm up, capture, read the graph, check replay, time it.")
@script_options
@click.option("--capture-mode", type=click.Choice(["global", "thread_local", "relaxed"]), default="global",
              show_default=True, help="CUDA stream-capture error mode (torch.cuda.graph capture_error_mode).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Output folder [default: cgtool-out/<script-stem>/].")
@click.option("--no-replay-check", is_flag=True, help="Skip the replay-versus-eager comparison.")
@click.option("--check-steps", "check_steps", type=Number("check_steps"), default=CHECK_STEPS, show_default=True, metavar="K",
              help="Consecutive steps the replay check compares from identical state (replay, pieces, module "
              "sets); the first that differs is reported. A step that advances a counter is timed in blocks of at "
              "most K calls.")
@click.option("--no-timing", is_flag=True, help="Skip the eager-versus-replay timing.")
@click.option("--no-checks", is_flag=True, help="Skip the op tracing and capture checks (faster).")
@click.option("--no-node-lines", is_flag=True, help="Skip mapping graph nodes to lines and profiling replays "
              "for their GPU time (docs/node-lines.md).")
@click.option("--cpu", "force_cpu", is_flag=True, help="Run the CPU analysis even when a GPU is present.")
@click.option("--piecewise", is_flag=True, help="Also capture the step in pieces at its break points "
              "(torch.compile backend=\"cudagraphs\"): pieces, kernels in graphs, replay, speedup (docs/partial.md).")
@click.option("--modules", "modules_depth", type=Number("modules"), default=None, metavar="DEPTH",
              help="Also map which submodules (to DEPTH below the models in setup's state; the blocks of a "
              "ModuleList are listed below it) capture on their own, and time graphing them (docs/partial.md).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout instead of tables.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the HTML report here (report.html in the output folder is always written).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict line (and errors).")
@nproc_option
def capture(target: str, entry: str | None, warmup: int, timeout: float, capture_mode: str, out_dir: str | None,
            no_replay_check: bool, check_steps: int, no_timing: bool, no_checks: bool, no_node_lines: bool,
            force_cpu: bool, piecewise: bool, modules_depth: int | None, as_json: bool, html_path: str | None,
            quiet: bool, nproc: int | None) -> None:
    """Capture one iteration of TARGET (script.py or script.py:function) as a CUDA graph.

    \b
    The script contract (docs/script-contract.md):
      setup(device)      optional, run once: persistent state as a dict or tuple
      inputs(i, device)  optional: fresh inputs of iteration i, as a dict or tuple
      step(...)          required: one iteration, called as step(*state, *inputs, **state, **inputs)
    Module-level code runs once at import. `device` is a torch.device, so the same script runs on CPU.

    \b
    Writes to the output folder (atomically):
      report.json        versioned report: environment, graph, replay check, timings, findings, errors
      report.html        the same as one self-contained page: findings, graph, line profile (docs/html.md)
      graph.dot          cgtool's picture of the graph (graph.svg too when Graphviz `dot` is installed)
      graph.driver.dot   the CUDA driver's verbose dump (cudaGraphDebugDotPrint)
      timeline.json      the profiled replays and eager step as a Chrome trace (Perfetto, chrome://tracing),
                         each kernel named by its graph node, line and module (not with --no-node-lines)
      graph-piece-N.dot  with --piecewise: each piece's graph
      modules-plan.py    with --modules: the recommended set as plain PyTorch to paste

    \b
    torch.compile is found while the script runs, wherever it is called (the script, an imported module or
    library, a decorator, Module.compile(); docs/compiled.md). With CUDA graphs (mode="reduce-overhead"/
    "max-autotune", options={"triton.cudagraphs": True}, backend="cudagraphs") cgtool captures nothing itself
    and runs no tracer; it watches torch.compile's CUDAGraph Trees (graphs per function, skips and re-records
    with torch's reason and your line, fallbacks, kernels in graphs, pool memory), writes graph.dot,
    graph-2.dot, ... (the driver's DOT of each graph) and times eager / compiled without graphs / as compiled.
    Without CUDA graphs cgtool captures the compiled code itself. Graph breaks are reported at your line
    (CG701-CG705).

    \b
    Partial capture (docs/partial.md), run in a second worker after the whole-step capture:
      --piecewise        the step under torch.compile(backend="cudagraphs"): split at its graph breaks,
                         each piece a CUDA graph; on CPU, the split points the analysis predicts
      --modules DEPTH    which submodules graph on their own (make_graphed_callables semantics, each
                         under its call's autocast and grad mode), the largest set whose step matches
                         eager (a module that makes it differ is named, with the likely cause), its
                         speedup, and that set as code to paste (modules-plan.py); on CPU, which
                         modules' ops carry error findings
      Not on ranks yet: with --nproc-per-node, under torchrun or for a script written for ranks
      they are a usage error (exit 2).

    \b
    Without a GPU the script runs on CPU and the CPU analysis (what `cgtool lint` checks) is shown.

    \b
    Exit codes: 0 captured, replay matches, no error findings; 1 problems found (capture failed,
    replay mismatch, error findings, the script raised); 2 usage or input error (missing file, syntax
    error, no entry function); 3 no CUDA device (the CPU analysis ran and found no error) or an
    environment problem (output folder or stdout not writable); 4 the worker crashed or timed out;
    130 interrupted (143 SIGTERM, 129 SIGHUP: the report is still written). A run that did not complete
    (script error, crash, timeout, interrupt) never replaces an existing report.json: it writes
    report.failed.json beside it and says so. A symlink in --out is replaced, never written through.

    \b
    --nproc-per-node N: N ranks through torch.distributed.run, each captured on cuda:LOCAL_RANK (process
    group formed by cgtool unless the script calls init_process_group; setup(device, rank, world_size)
    gets its rank); report.json is the merged report, rank<r>/report.json each rank's (docs/distributed.md).
    """
    from cgtool.model.job import CaptureSettings
    from cgtool.render.capture import render_report
    from cgtool.render.console import console
    from cgtool.render.json_text import json_text
    from cgtool.render.outputs import prepare_out_dir, run_complete, say_kept, write_outputs
    from cgtool.worker.service import analyse

    job = make_job(target, entry, CaptureSettings(
        warmup=warmup, capture_mode=capture_mode, replay_check=not no_replay_check, check_steps=check_steps,
        timing=not no_timing, checks=not no_checks, node_lines=not no_node_lines), force_cpu=force_cpu)
    from cgtool.commands.distributed import (capture_distributed, ranks_to_start, refuse_partial_on_ranks,
                                             wants_distributed)

    asked, nproc = nproc, ranks_to_start(nproc, job.script)
    refuse_partial_on_ranks(piecewise, modules_depth, nproc, asked)
    if html_path:
        from cgtool.render.files import check_writable, refuse_input

        check_writable(html_path, "--html")
        refuse_input(html_path, "--html", {job.script: "the script"})
    if wants_distributed(nproc):
        capture_distributed(job, nproc, timeout, out_dir, as_json, quiet, html_path)
    stem = os.path.splitext(os.path.basename(job.script))[0]
    out_dir = prepare_out_dir(out_dir or os.path.join("cgtool-out", stem))
    show = not (as_json or quiet)
    write_error, kept = None, {}
    with tempfile.TemporaryDirectory(prefix="cgtool-work-") as work_dir:
        with progress(show) as on_event:
            analysis = analyse(job.with_work_dir(work_dir), timeout, on_event=on_event,
                               partial=(piecewise, modules_depth) if piecewise or modules_depth is not None else None)
        report, outcome = analysis.report, analysis.outcome
        assert outcome is not None  # one worker (ranks went to capture_distributed)
        try:
            kept = write_outputs(report, out_dir, complete=run_complete(report, outcome.failure))
            if html_path:
                from cgtool.render.files import save_result
                from cgtool.render.html import render_report_html
                from cgtool.render.html_files import read_sources, report_paths

                save_result(html_path, render_report_html(report, read_sources(report_paths(report))),
                            run_complete(report, outcome.failure))
        except CgtoolError as exc:  # a full disk, a folder gone read-only: show the report anyway, then fail
            write_error = exc
    if as_json:
        sys.stdout.write(json_text(report.to_json()))
    else:
        render_report(report, console(), quiet=quiet)
    say_kept(out_dir, kept)
    if write_error is not None:
        advice = "free space or pick" if write_error.exit_code == ExitCode.ENVIRONMENT else "pick"
        raise CgtoolError(f"{write_error.message.rstrip('.')}. The report above was not saved; {advice} another "
                          "folder with --out DIR.", write_error.exit_code)
    sys.exit(exit_code_for(report, outcome))
