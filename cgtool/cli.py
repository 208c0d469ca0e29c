"""The `cgtool` command line: a click group; each command lives in cgtool/commands/<name>.py."""

from __future__ import annotations

import sys

import click

from cgtool import __version__
from cgtool.commands import COMMANDS
from cgtool.errors import CgtoolError, ExitCode


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cgtool")
def cli() -> None:
    """Can this PyTorch step be captured as a CUDA graph? Which line stops it? What does replay buy?

    \b
      cgtool capture script.py   warm up, capture, read the graph, check replay, time it
      cgtool lint PATH...        the capture checks as a CI gate (works without a GPU)
      cgtool bench script.py     careful eager-versus-replay measurement
      cgtool dot FILE            summarize, render or diff a captured graph (no torch needed)
    """


for _command in COMMANDS:
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning a CgtoolError into its message and exit code."""
    from cgtool.render.console import print_error

    try:
        code = cli.main(args=argv, prog_name="cgtool", standalone_mode=False)
    except CgtoolError as exc:
        print_error(exc.message)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        print_error("Interrupted.")
        sys.exit(ExitCode.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.USAGE if exc.exit_code == 2 else exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
