"""cgtool's Python API, for the user's own code and tests: `check(step or script)` analyses one step the way
`cgtool lint` does (in a worker process: the CPU analysis without a GPU, capture and replay check with one) and
returns a `CheckReport` (docs/python-api.md)."""

from cgtool.api.check import check
from cgtool.api.report import CheckReport

__all__ = ["CheckReport", "check"]
