"""`python -m cgtool.worker JOB RESULT FD`: the worker child process (cgtool/worker/child.py)."""

import sys

from cgtool.worker.child import main

sys.exit(main(sys.argv[1:]))
