"""`cgtool bench`: statistics, stopping rule, result records, comparison, plots (the GPU loop lives in the worker)."""
