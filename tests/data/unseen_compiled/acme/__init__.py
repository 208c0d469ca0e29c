"""acme: a small in-house helper package (trainer, kernels, blocks, debug hooks, model factory)."""
