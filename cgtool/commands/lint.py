"""`cgtool lint`: the capture checks as a CI gate, with machine-readable output and exit codes."""

from __future__ import annotations

import os
import sys

import click

from cgtool.commands.common import Number, check_cwd
from cgtool.model.lint_result import LINT_FORMATS


@click.command(name="lint", short_help="Capture checks as a CI gate; runs the scripts, works without a GPU.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(LINT_FORMATS), default=None,
              help="Output format [default: text, or `format` from [tool.cgtool]].")
@click.option("--select", multiple=True, metavar="IDS", help="Only these rule ids or prefixes (CG1, CG201,CG302).")
@click.option("--ignore", multiple=True, metavar="IDS", help="Leave out these rule ids or prefixes.")
@click.option("--entry", default="step", show_default=True, help="The entry function scripts define.")
@click.option("--warmup", type=Number("lint_warmup"), default=None, help="Traced warmup iterations, at least 2 [default: 3].")
@click.option("--timeout", type=Number("timeout"), default=None, help="Seconds per script [default: 300].")
@click.option("--cpu", "force_cpu", is_flag=True, help="Run the CPU analysis even when a GPU is present.")
@click.option("-j", "--jobs", type=Number("jobs"), default=None,
              help="Scripts analysed in parallel, each in its own worker process [default: one per CPU, "
                   "at most one per GiB of free memory and 8].")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the output to a file, atomically (a device, or a symlink's target, is written in place; a FIFO "
                   "once a reader opens it, waiting at most 10 s). An interrupted run never replaces an existing "
                   "file: its output goes beside it, as NAME.failed.EXT.")
@click.option("--nproc-per-node", "nproc", type=Number("nproc"), default=None, metavar="N",
              help="Analyse each script on N ranks (torch.distributed.run) and add the cross-rank checks (CG6xx).")
@click.option("--scripts-only", is_flag=True,
              help="Pass over the files given that define no entry function (read, not imported), as a folder "
                   "search does; none left is a pass. For pre-commit, which passes every changed .py file.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the findings as one self-contained HTML page here (docs/html.md).")
def lint(paths: tuple[str, ...], fmt: str | None, select: tuple[str, ...], ignore: tuple[str, ...], entry: str,
         warmup: int | None, timeout: float | None, force_cpu: bool, jobs: int | None, output: str | None,
         nproc: int | None, scripts_only: bool, html_path: str | None) -> None:
    """Check scripts (files, `script.py:fn`, or folders searched for scripts with a step()) for what
    breaks capture.

    \b
    lint RUNS every script it checks: it imports each one and calls setup, inputs and
    the step for a few iterations, in a worker process. Lint only code you would run.

    \b
    On a CUDA machine: traced warmup, a real capture and replay-versus-eager per script.
    Without one: the CPU analysis (syncs, shapes, control flow, streams, RNG, host inputs); the
    rules that need a GPU are listed as skipped.
    Suppress a finding with `# cgtool: ignore[CG101]` on its line (a malformed comment or an
    unknown id suppresses nothing and is itself a CG001 finding). Defaults come from
    [tool.cgtool] in the nearest pyproject.toml (select, ignore, format, warmup, timeout).
    Progress goes to stderr when it is a terminal. Ctrl-C stops the workers and prints the
    findings made so far, marked as interrupted.

    \b
    Exit codes: 0 no error-severity finding; 1 error findings or a script that could not be
    analysed; 2 usage error (bad option, missing path, no scripts found, bad [tool.cgtool]);
    3 environment problem (the -o file or stdout cannot be written); 130 interrupted (Ctrl-C),
    after printing the findings made so far (143 for SIGTERM, 129 for SIGHUP).
    """
    from cgtool.lint.config import load_config
    from cgtool.lint.filter import normalize_patterns
    from cgtool.lint.run import LintOptions, default_jobs, lint_paths

    check_cwd()
    if nproc:
        from cgtool.worker.launch import check_nproc

        check_nproc(nproc)
    if output:
        from cgtool.render.files import check_writable

        check_writable(output, "--output")
        _refuse_scripts_as_output(output, paths, entry)
    if html_path:
        from cgtool.render.files import check_writable

        check_writable(html_path, "--html")
        _refuse_scripts_as_output(html_path, paths, entry, "--html")
    first = paths[0].rsplit(":", 1)[0] if not os.path.exists(paths[0]) else paths[0]
    # one configuration per run: the nearest [tool.cgtool] above the first path
    config = load_config(first if os.path.isdir(first) else os.path.dirname(os.path.abspath(first)))
    sel = normalize_patterns(_split(select), "--select") if select else config.select
    ign = normalize_patterns(_split(ignore), "--ignore") if ignore else config.ignore
    warm = warmup if warmup is not None else config.warmup if config.warmup is not None else 3
    opts = LintOptions(entry=entry, warmup=warm, timeout=timeout or config.timeout or 300.0,
                       select=sel, ignore=ign, force_cpu=force_cpu, jobs=jobs or default_jobs(), nproc=nproc or 0,
                       scripts_only=scripts_only)
    from cgtool.render.lint_formats import render_lint
    from cgtool.render.lint_progress import lint_progress

    with lint_progress(sys.stderr.isatty()) as on_progress:
        result = lint_paths(paths, opts, on_progress)
    text = render_lint(result, fmt or config.format or "text", to_tty=output is None and sys.stdout.isatty())
    if output:
        from cgtool.render.files import save_result

        save_result(output, text, complete=not result.interrupted)  # an interrupted run keeps a saved -o file
    else:
        sys.stdout.write(text)
    if html_path:
        from cgtool.render.html import render_lint_html
        from cgtool.render.html_files import lint_paths as named_files
        from cgtool.render.files import save_result
        from cgtool.render.html_files import read_sources

        save_result(html_path, render_lint_html(result, read_sources(named_files(result))), complete=not result.interrupted)
    sys.exit(result.exit_code)


def _refuse_scripts_as_output(output: str, paths: tuple[str, ...], entry: str, option: str = "-o") -> None:
    """-o (or --html) must not name a script this run reads (lint would replace it with its report)."""
    from cgtool.lint.run import find_scripts
    from cgtool.render.files import refuse_input

    if not os.path.isfile(output):
        return
    try:
        scripts = find_scripts(paths, entry)
    except Exception:  # noqa: BLE001 - a bad path is reported by the run itself, in its own words
        scripts = []
    given = [p for p in paths if os.path.isfile(p)]
    refuse_input(output, option, {path: "a script" for path in [*given, *(s for s, _ in scripts)]})


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]
