"""The `cgtool` command line: a click group whose commands (cgtool/commands/<name>.py) load when used,
and the one place where an error or an exit code becomes the process's exit status."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from cgtool import __version__
from cgtool.errors import CgtoolError, ExitCode, interrupted, interrupted_status

# name -> "module:attribute"; a command's module is imported only when that command (or --help) needs it.
COMMANDS = {
    "capture": "cgtool.commands.capture:capture",
    "lint": "cgtool.commands.lint:lint",
    "bench": "cgtool.commands.bench:bench",
    "dot": "cgtool.commands.dot:dot",
    "report": "cgtool.commands.report:report",
}


class LazyGroup(click.Group):
    """click's documented pattern for lazily loaded subcommands."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cgtool")
def cli() -> None:
    """Can this PyTorch step be captured as a CUDA graph? Which line stops it? What does replay buy?

    \b
      cgtool capture script.py   warm up, capture, read the graph, check replay, time it
      cgtool lint PATH...        the capture checks as a CI gate (works without a GPU)
      cgtool bench script.py     careful eager-versus-replay measurement
      cgtool dot FILE            summarize, render or diff a captured graph (no torch needed)
      cgtool report FILE.json    any saved report as one self-contained HTML page

    Numbers in options are written with the ASCII digits 0-9 (no `_` separators).
    """


def main(argv: list[str] | None = None) -> Any:
    """Entry point: run the CLI, turning a CgtoolError into its message and exit code. A full, broken or
    closed stdout is such an error (exit 3, one line on stderr), whichever command was writing."""
    from cgtool.render.console import guard_stdout
    from cgtool.worker import lifetime

    guard_stdout()
    if argv is None:  # the cgtool process itself (not a test calling main in its own process)
        lifetime.stop_on_signals()  # SIGTERM and SIGHUP stop the run as Ctrl-C does, report included
        lifetime.become_subreaper()  # what a killed worker's script started comes back here to be ended
    try:
        code = cli.main(args=argv, prog_name="cgtool", standalone_mode=False)
        sys.stdout.flush()  # a full or closed stdout shows here, not as a traceback at exit
    except CgtoolError as exc:
        _exit_with(exc.message, exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        _exit_with(f"{interrupted(lifetime.stop_name(), sentence=True)}.", interrupted_status(lifetime.stop_name()))
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.USAGE if exc.exit_code == 2 else exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit as exc:  # a command's sys.exit(code): what it printed must still reach stdout, or say why not
        try:
            sys.stdout.flush()
        except CgtoolError as err:
            _exit_with(err.message, err.exit_code)
        if exc.code == ExitCode.INTERRUPTED:  # stopped by SIGTERM or SIGHUP: 128 + its number, as shells say
            sys.exit(interrupted_status(lifetime.stop_name()))
        raise
    sys.exit(code if isinstance(code, int) else ExitCode.OK)


def _exit_with(message: str, code: int) -> None:
    from cgtool.render.console import print_error, silence_stdout

    try:
        sys.stdout.flush()
    except (CgtoolError, OSError, ValueError):
        silence_stdout()  # what is still buffered cannot be written; the exit must not try again
    print_error(message)
    sys.exit(code)
