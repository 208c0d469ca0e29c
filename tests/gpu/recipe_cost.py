"""What the recipe-pool figure costs (issue 36): `capture`'s last phase captures the step a second time, as
PyTorch's documented recipe does, to read that pool (cgtool/capture/memory.py recipe_pool). Prints one JSON line.

  python3 tests/gpu/recipe_cost.py SCRIPT...

Per script, in one process: cgtool's own setup, warmup and capture (run_to_capture), then recipe_pool timed three
times (the first is what capture pays; the others show what is fixed cost), and the same capture without
recipe_pool for the whole `cgtool capture` wall time: CGTOOL_NO_RECIPE_POOL is not a cgtool setting, so the CLI
run is timed whole and the phase is timed in process."""

import json
import os
import subprocess
import sys
import time

import torch

from cgtool.capture.harness import run_to_capture
from cgtool.capture.memory import recipe_pool
from cgtool.model.job import RunSettings
from cgtool.model.phase_log import PhaseLog
from cgtool.script.contract import load_script
from cgtool.script.session import ScriptSession


def main():
    rows = []
    for path in sys.argv[1:]:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "cgtool", "capture", path, "--out", f"/tmp/recipe-cost-{len(rows)}"],
                           capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
        cli_s = time.perf_counter() - t0
        script = load_script(path)
        captured = run_to_capture(ScriptSession(script, torch.device("cuda")), RunSettings(warmup=3), PhaseLog())
        times, pools = [], []
        for _ in range(3):
            t = time.perf_counter()
            pools.append(recipe_pool(captured))
            times.append(time.perf_counter() - t)
        rows.append({"script": path, "cli_s": cli_s, "cli_rc": r.returncode, "recipe_s": times, "recipe_pool": pools,
                     "own_pool": captured.pool_bytes})
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
