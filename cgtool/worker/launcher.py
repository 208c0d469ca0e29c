"""The launcher's process (`python -m cgtool.worker.launcher TMP torch.distributed.run ARGS...`): PyTorch's own
launcher with ARGS, run in this process after making it the ranks' subreaper and tying it to cgtool (killed with cgtool,
ranks included); its temporary files (torchelastic_*) go to TMP, inside cgtool's run folder, so nothing is
left in $TMPDIR; whatever is still running below it when it ends is killed."""

from __future__ import annotations

import os
import runpy
import sys
import tempfile
import traceback

from cgtool.worker.lifetime import end_with_parent, exit_now


def main(argv: list[str]) -> None:
    end_with_parent(folders=(os.path.dirname(os.path.abspath(argv[0])),))  # cgtool's run folder, TMP's parent
    os.makedirs(argv[0], exist_ok=True)
    tempfile.tempdir = argv[0]  # the agent's own folders; the ranks keep the user's $TMPDIR
    module = argv[1]  # torch.distributed.run, named in the command line so that it shows what runs
    sys.argv = [module, *argv[2:]]
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - torch's failure summary (ChildFailedError) is printed as Python would
        traceback.print_exc()
        code = 1
    exit_now(code)


if __name__ == "__main__":
    main(sys.argv[1:])
