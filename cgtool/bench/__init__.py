"""`cgtool bench`: measurement, statistics, stopping rule, result records, comparison, plots (no worker, no jobs)."""
