"""One rank's process (`python -m cgtool.worker.rank_child JOB RUN_DIR`, started by torch.distributed.run):
its output goes to RUN_DIR/rank{R}.log, its events and result to RUN_DIR (cgtool/pipeline/rank_job.py), and
it leaves without interpreter teardown (a poisoned CUDA context or a broken NCCL communicator can hang in
atexit handlers and in the process group's destructor)."""

from __future__ import annotations

import json
import os
import sys

from cgtool.model.job import Job


def main(argv: list[str]) -> int:
    from cgtool.worker.lifetime import end_with_parent, exit_now, kill_descendants

    end_with_parent()  # the launcher gone (cgtool killed): this rank and what it started end too
    job_path, run_dir = argv[0], argv[1]
    rank = int(os.environ.get("RANK", 0))
    log = os.open(os.path.join(run_dir, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    with open(job_path) as fh:
        job = Job.from_json(json.load(fh))
    from cgtool.pipeline.rank_job import run_rank

    try:
        code = run_rank(job, run_dir)
    except BaseException:
        kill_descendants()
        raise
    exit_now(code)


if __name__ == "__main__":
    main(sys.argv[1:])
