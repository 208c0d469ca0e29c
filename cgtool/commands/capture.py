"""`cgtool capture` (placeholder until its issue lands)."""

import click


@click.command(name="capture")
def capture() -> None:
    """Not built yet."""
    raise click.UsageError("cgtool capture is not built yet")
