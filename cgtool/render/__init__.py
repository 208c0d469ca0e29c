"""Renderers: each formats plain data (a report, findings, a graph summary); none computes."""
