"""Shared rich console setup: respects NO_COLOR and non-TTY output; errors go to stderr."""

from __future__ import annotations

import os

from rich.console import Console

_consoles: dict[bool, Console] = {}


def console(stderr: bool = False) -> Console:
    """The process's rich Console for stdout (or stderr); no colour when NO_COLOR is set."""
    if stderr not in _consoles:
        _consoles[stderr] = Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
    return _consoles[stderr]


def print_error(message: str) -> None:
    console(stderr=True).print(f"[bold red]error:[/] {message}", soft_wrap=True)
