"""`cgtool lint`'s progress on stderr: a bar of scripts checked, shown only when stderr is a terminal."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from cgtool.render.console import console


@contextmanager
def lint_progress(show: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """Yield lint_paths' progress callback `(done, total, last script)`, or None when not `show`n."""
    if not show:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("linting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("[dim]{task.description}"), console=console(stderr=True), transient=True) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, path: str) -> None:
            last = os.path.relpath(path) if path else ""
            bar.update(task, completed=done, total=total, description=last)

        yield update
