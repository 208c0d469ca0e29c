"""cgtool: find out whether a PyTorch step can be captured as a CUDA graph, and what replay buys."""

__version__ = "0.1.0"
