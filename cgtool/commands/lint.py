"""`cgtool lint` (placeholder until its issue lands)."""

import click


@click.command(name="lint")
def lint() -> None:
    """Not built yet."""
    raise click.UsageError("cgtool lint is not built yet")
