"""`cgtool bench --piecewise / --modules DEPTH`: partial capture timed with bench's careful method."""

from __future__ import annotations

import json
import sys

from cgtool.commands.common import make_job, progress
from cgtool.model.exit_codes import bench_partial_exit
from cgtool.model.job import PartialSettings


def refuse_unused(piecewise: bool, given: list[str]) -> None:
    """The bench options partial capture's careful timing does not use (no sweep, plot, comparison or L2 flush
    there): a usage error before the worker starts, never dropped in silence."""
    from cgtool.errors import options_refused

    if given:
        how = "--piecewise" if piecewise else "--modules"
        raise options_refused(given, f"with {how}", ": bench times the partial capture once, without a size sweep, "
                              "plot, comparison or L2 flush (docs/partial.md)")


def bench_partial(target: str, entry: str | None, timeout: float, settings: PartialSettings,
                  out_file: str | None, as_json: bool, quiet: bool) -> None:
    from cgtool.model.report import ErrorRecord
    from cgtool.render.console import console

    job = make_job(target, entry, settings)
    from cgtool.worker.service import run_partial_jobs

    with progress(not (as_json or quiet)) as on_event:
        result, outcome = run_partial_jobs(job, max(timeout, 60.0 + 2 * settings.budget_s + 120.0), on_event)
    if outcome.result is None:
        result.errors.append(ErrorRecord(outcome.phase or "worker", outcome.failure or "crash", outcome.message))
    data = json.dumps({"kind": "cgtool-bench-partial", **result.to_json()}, indent=1) + "\n"
    out = console()
    if as_json:
        sys.stdout.write(data)
    else:
        from cgtool.render.findings_console import render_errors
        from cgtool.render.partial import render_modules, render_piecewise

        if result.piecewise is not None and not quiet:
            render_piecewise(result.piecewise, out)
        if result.modules is not None and not quiet:
            render_modules(result.modules, out)
        render_errors(result.errors, out)
    if out_file:  # a failed run never replaces a saved report: it goes beside it
        from cgtool.render.files import save_result

        save_result(out_file, data, complete=outcome.failure is None and not result.errors)
    sys.exit(bench_partial_exit(result.piecewise, result.modules, list(result.errors), outcome.failure))
