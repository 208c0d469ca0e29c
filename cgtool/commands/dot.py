"""`cgtool dot` (placeholder until its issue lands)."""

import click


@click.command(name="dot")
def dot() -> None:
    """Not built yet."""
    raise click.UsageError("cgtool dot is not built yet")
