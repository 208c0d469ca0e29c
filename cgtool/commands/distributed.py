"""What capture, lint and bench do with `--nproc-per-node N` (or under the user's torchrun): run the job on
every rank, merge, write the folder, print, pick the exit code. Not a command itself (as common.py)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from cgtool.commands.common import Number
from cgtool.errors import CgtoolError, ExitCode, options_refused

if TYPE_CHECKING:
    from cgtool.model.job import Job
    from cgtool.model.ranks import DistReport


def nproc_option(fn: Any) -> Any:
    return click.option("--nproc-per-node", "nproc", type=Number("nproc"), default=None, metavar="N",
                        help="Run the step on N ranks (one GPU each) through torch.distributed.run; every rank is "
                             "captured and the reports merged (docs/distributed.md). Under torchrun this is automatic.")(fn)


def ranks_to_start(nproc: int | None, script: str) -> int | None:
    """--nproc-per-node as given; without it (and outside a torchrun), 1 for a script written for ranks: a
    plain run analyses it as a world of one rank (docs/distributed.md)."""
    from cgtool.script.ranks import written_for_ranks
    from cgtool.worker.distributed import under_torchrun

    if nproc or under_torchrun():
        return nproc
    return 1 if written_for_ranks(script) else None


def wants_distributed(nproc: int | None) -> bool:
    from cgtool.worker.distributed import under_torchrun

    return bool(nproc) or under_torchrun()


def _on_ranks_because(asked: int | None) -> str:
    """Why this run is on ranks: --nproc-per-node as given (`asked`), the user's torchrun, or a script written
    for ranks (a plain run analyses it as a world of one rank)."""
    from cgtool.worker.distributed import under_torchrun

    if asked:
        return f"--nproc-per-node {asked} runs the step on ranks"
    if under_torchrun():
        return "under torchrun the step runs on ranks"
    return "the script is written for ranks (it uses torch.distributed), so it runs as a world of one rank"


def refuse_partial_on_ranks(piecewise: bool, modules_depth: int | None, nproc: int | None, asked: int | None) -> None:
    """--piecewise / --modules capture one process's step; a run on ranks (--nproc-per-node, torchrun, or a
    script written for ranks, which a plain run analyses as a world of one) has no per-rank partial capture yet:
    a usage error that says so, never options dropped in silence. `asked`: --nproc-per-node as given."""
    if not (piecewise or modules_depth is not None) or not wants_distributed(nproc):
        return
    options = " and ".join(o for o, on in (("--piecewise", piecewise), ("--modules", modules_depth is not None)) if on)
    raise CgtoolError(f"{options} capture one process's step and {_on_ranks_because(asked)}; partial capture per "
                      "rank is not supported yet (docs/partial.md). Run it on a script without torch.distributed, "
                      f"or leave out {options}.", ExitCode.USAGE)


def refuse_bench_options_on_ranks(nproc: int | None, asked: int | None, unsupported: list[str],
                                  stopping: list[str]) -> None:
    """bench on ranks times a fixed count in lockstep and writes the merged report only: the options it cannot
    honour are a usage error before any rank starts, never dropped in silence (docs/distributed.md).
    `unsupported`: output and sweep options given; `stopping`: --budget-s / --ci given on the command line."""
    if not wants_distributed(nproc):
        return
    if unsupported:  # the run on ranks writes the merged report only
        raise options_refused(unsupported, "on ranks", f", and {_on_ranks_because(asked)}: bench on ranks writes "
                              "the merged report (cgtool-out/<stem>/report.json, report.html, --html)")
    if stopping:
        options = " and ".join(stopping)
        raise CgtoolError(f"{options} {'sets' if len(stopping) == 1 else 'set'} when bench's adaptive measuring "
                          f"stops, and {_on_ranks_because(asked)}: there every rank times the same fixed count "
                          "(6 alternating blocks of --iters steps, default 50, per mode), since ranks that stopped "
                          "on their own would run different numbers of collectives and wait forever "
                          f"(docs/distributed.md). Leave out {options}, or set the count with --iters N.",
                          ExitCode.USAGE)


def given(name: str) -> bool:
    """The option `name` (its parameter name) was set by the user, not left at its default."""
    ctx = click.get_current_context()
    return ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT


def run(job: Job, nproc: int | None, timeout: float, show: bool) -> tuple[DistReport | None, Any]:
    """Run the job on the ranks with progress on stderr (worker/service.py: analyse_ranks); (merged report or None
    on a rank ≠ 0, outcome)."""
    from cgtool.render.console import console
    from cgtool.worker.service import analyse_ranks

    if job.kind != "capture":
        raise CgtoolError("internal: distributed runs take capture jobs", ExitCode.USAGE)
    err = console(stderr=True)

    def on_event(rank: int, event: dict[str, Any]) -> None:
        if show and event.get("phase"):
            detail = f" ({event['detail']})" if event.get("detail") else ""
            err.print(f"[dim]rank {rank} {event.get('t', 0):7.2f}s  {event['phase']}{detail}[/]", soft_wrap=True)

    return analyse_ranks(job, nproc, timeout, warmup_given=given("warmup"), on_event=on_event)


def exit_code(report: DistReport | None, outcome: Any) -> ExitCode:
    """The run on ranks' exit code (model/exit_codes.py: distributed_exit)."""
    from cgtool.model.exit_codes import distributed_exit

    return distributed_exit(report, outcome.failure, list(outcome.ranks or []))


def capture_distributed(job: Job, nproc: int | None, timeout: float, out_dir: str | None, as_json: bool,
                        quiet: bool, html_path: str | None = None) -> None:
    from cgtool.render.console import console
    from cgtool.render.distributed import dist_files, render_dist_report
    from cgtool.render.json_text import json_text
    from cgtool.render.outputs import dist_complete, own_path, prepare_out_dir, say_kept, write_own

    if html_path:  # before the run, as a plain capture checks it (bench on ranks comes here first)
        from cgtool.render.files import check_writable, refuse_input

        check_writable(html_path, "--html")
        refuse_input(html_path, "--html", {job.script: "the script"})
    stem = os.path.splitext(os.path.basename(job.script))[0]
    out_dir = prepare_out_dir(out_dir or os.path.join("cgtool-out", stem))
    report, outcome = run(job, nproc, timeout, show=not (as_json or quiet))  # failed ranks completed (the service)
    if report is None:
        sys.exit(exit_code(report, outcome))  # rank 0 writes and prints the merged report
    complete = dist_complete(report, outcome.failure)  # a world that failed or stopped keeps an existing report
    kept: dict[str, str] = {}
    for name, text in dist_files(report).items():
        if name == "report.json":  # written once, last, naming every file of the run (itself too)
            report.outputs[name] = own_path(out_dir, name, complete)
            continue
        report.outputs[name] = write_own(out_dir, name, text, complete, kept)
    try:
        _write_html(report, out_dir, html_path, complete, kept)
    except Exception as exc:  # noqa: BLE001 - the page must never cost the merged report.json (written next)
        console(stderr=True).print(f"report.html was not written: {type(exc).__name__}: {exc}", markup=False,
                                   soft_wrap=True)
    write_own(out_dir, "report.json", json_text(report.to_json()), complete, kept)
    if as_json:
        sys.stdout.write(json_text(report.to_json()))
    else:
        render_dist_report(report, console(), quiet=quiet)
    say_kept(out_dir, kept)
    sys.exit(exit_code(report, outcome))


def _write_html(report: DistReport, out_dir: str, html_path: str | None, complete: bool,
                kept: dict[str, str]) -> None:
    """report.html beside the merged report.json (and at --html): one page, a tab per rank (docs/html.md); an
    incomplete run keeps an existing page, as it keeps report.json."""
    from cgtool.render.files import save_result
    from cgtool.render.html import render_distributed_html
    from cgtool.render.html_files import dist_paths, read_sources
    from cgtool.render.outputs import write_own

    page = render_distributed_html(report, read_sources(dist_paths(report)))
    report.outputs["report.html"] = write_own(out_dir, "report.html", page, complete, kept)
    if html_path:
        save_result(html_path, page, complete)
