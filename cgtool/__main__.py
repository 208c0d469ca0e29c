"""`python -m cgtool`."""

from cgtool.cli import main

main()
