"""The GPU harness: setup, warmup on a side stream, capture (one sequence for capture and bench), replay check."""
