"""Helpers imported by the samples in samples/compiled: a model factory and ops compiled where real projects
compile them (in a library module, not in the script cgtool is given)."""
