"""`cgtool bench` (placeholder until its issue lands)."""

import click


@click.command(name="bench")
def bench() -> None:
    """Not built yet."""
    raise click.UsageError("cgtool bench is not built yet")
