"""Captured CUDA graphs: a framework-free model, readers (CUDA, driver DOT, cgtool DOT) and analyses."""
