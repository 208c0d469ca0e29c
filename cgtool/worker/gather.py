"""A rank's own files in its host's run folder, once its child handed them to rank 0 through the process group's
store (cgtool/pipeline/rank_gather.py): removed, and the folder once empty. Used under the user's torchrun."""

from __future__ import annotations

import os


def pushed(run_dir: str, rank: int) -> bool:
    return os.path.exists(os.path.join(run_dir, f"pushed.rank{rank}"))


def remove_own_files(run_dir: str, rank: int) -> None:
    """Every file of rank `rank` in run_dir (job.rank<r>.json, rank<r>.*, gate.rank<r>, ...), then the folder if empty."""
    for name in os.listdir(run_dir) if os.path.isdir(run_dir) else ():
        if name.startswith(f"rank{rank}.") or name.endswith(f".rank{rank}") or f".rank{rank}." in name:
            try:
                os.remove(os.path.join(run_dir, name))
            except OSError:
                pass
    try:
        os.rmdir(run_dir)
    except OSError:
        pass
