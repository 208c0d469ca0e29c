"""Recording what a step does: the Tracer (torch dispatch + function modes), CPU stand-ins for CUDA, the CUDA watch."""
