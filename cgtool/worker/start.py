"""How cgtool starts a Python process of its own (the worker, the ranks' launcher, each rank): it runs THIS
cgtool package, wherever it lies, and never the user's working folder's.

`python -m cgtool.worker` would put the working folder first on the import path, so a `cgtool/` folder
(the clone's own folder, seen from its parent), a `torch.py` or a `click/` there would be imported in place
of cgtool's own. The child starts instead as `python -c BOOT PKG MODULE ARGS...`: BOOT drops the working
folder from the path, imports the cgtool package from PKG (the parent's), then runs MODULE as `-m` would.
The user's script still gets its own folder first on the path when it is loaded (script/contract.py), as
`python script.py` gives it.
"""

from __future__ import annotations

import os
import sys

from cgtool.script.frames import CGTOOL_DIR

# Runs before anything of cgtool's is imported. `python -c` puts "" (the working folder) first on sys.path;
# with -P or PYTHONSAFEPATH it puts nothing there, and then nothing is dropped.
BOOT = """\
import importlib.util, runpy, sys
if sys.path[:1] == [""]:
    del sys.path[0]
pkg = sys.argv[1]
spec = importlib.util.spec_from_file_location("cgtool", pkg + "/__init__.py", submodule_search_locations=[pkg])
sys.modules["cgtool"] = cgtool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cgtool)
sys.argv = sys.argv[2:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""

PACKAGE_DIR = CGTOOL_DIR.rstrip(os.sep)  # the folder of cgtool/__init__.py


def python_args(module: str, *args: str) -> list[str]:
    """The interpreter's arguments that run `module` of this cgtool with `args` (no interpreter in front:
    torch.distributed.run --no-python takes the interpreter as its program)."""
    return ["-c", BOOT, PACKAGE_DIR, module, *args]


def python_command(module: str, *args: str) -> list[str]:
    """The command line that runs `module` of this cgtool with `args`, as `python -m module args` would,
    without the working folder on the import path."""
    return [sys.executable, *python_args(module, *args)]
