"""`cgtool.check`: one step analysed through lint's own path (lint/run.py `analyse`: a worker process; the CPU
analysis on a machine without a GPU, warmup, capture and the replay check where one is present), with the
nearest `[tool.cgtool]` as `cgtool lint` reads it."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from cgtool.api.report import CheckReport
from cgtool.api.target import resolve


def check(target: str | os.PathLike[str] | Callable[..., Any], *, entry: str | None = None,
          setup: Callable[..., Any] | str | None = None, inputs: Callable[..., Any] | str | None = None,
          warmup: int | None = None, timeout: float | None = None, cpu: bool = False,
          select: Sequence[str] = (), ignore: Sequence[str] = ()) -> CheckReport:
    """Analyse one step as `cgtool lint` does and return its CheckReport.

    `target` is a script path (`"train.py"`, `"train.py:fn"`; `entry` names another function, `setup`/`inputs`
    other names for those of the contract) or a step function defined at the top level of a .py file (a test
    module, say), with `setup=`/`inputs=` functions of that file (or imported into it); with a function and no
    `setup`/`inputs`, the step is called with no state and no inputs. `cpu`: the CPU analysis even where a GPU is
    present. `warmup`, `timeout`, `select`, `ignore` default to the nearest `[tool.cgtool]`, then lint's defaults.

    The worker imports the step's file again (its module-level code runs there); the step runs for a few
    iterations. A usage problem (no such file, a step the worker cannot reach) raises CgtoolError."""
    from cgtool import __version__
    from cgtool.lint.config import load_config
    from cgtool.lint.filter import normalize_patterns
    from cgtool.lint.run import LintOptions, analyse, lint_job, script_result
    from cgtool.model.limits import check_number

    found = resolve(target, entry, setup, inputs)
    config = load_config(os.path.dirname(found.path))
    warm = int(check_number(warmup, "lint_warmup", "warmup")) if warmup is not None else config.warmup or 3
    limit = check_number(timeout, "timeout", "timeout") if timeout is not None else config.timeout or 300.0
    opts = LintOptions(entry=found.entry, warmup=warm, timeout=limit,
                       select=normalize_patterns(_ids(select), "select") if select else config.select,
                       ignore=normalize_patterns(_ids(ignore), "ignore") if ignore else config.ignore,
                       force_cpu=cpu)
    analysed = analyse(lint_job(found.path, opts, found.entry, found.settings), opts)
    if analysed is None:  # Ctrl-C: the worker was stopped; the caller (pytest, a notebook) stops as Python does
        raise KeyboardInterrupt("cgtool.check was interrupted before the analysis finished")
    report, world_of_one = analysed
    shown = os.path.relpath(found.path) if not os.path.relpath(found.path).startswith("..") else found.path
    return CheckReport(report, script_result(shown, report, opts, world_of_one), __version__)


def _ids(values: str | Sequence[str]) -> list[str]:
    """Rule ids as lint's --select takes them: a list, or one string, comma-separated ("CG1,CG302")."""
    values = [values] if isinstance(values, str) else list(values)
    return [v.strip() for value in values for v in str(value).split(",") if v.strip()]
