"""What cgtool costs against the plain floor, side by side in one run (issue 33, acceptance 4).

For each script given, in rounds (every mode of every script once per round, in the same order: A B C D, A B C D,
...), a fresh process each time, wall time from start to exit:

- floor: `python -c` that imports torch, loads the script through cgtool's own contract (script/contract.py:
  setup, inputs and step called as cgtool calls them), runs setup and 3 eager steps on the device, synchronizes;
- lint: `cgtool lint SCRIPT`;
- capture-no-timing: `cgtool capture SCRIPT --no-timing`;
- capture: `cgtool capture SCRIPT` (timing included).

Prints a markdown table of the medians with each mode's ratio to the floor (and writes it to --out after every
round, so a run stopped by a time limit still leaves the rounds it finished):

    PYTHONPATH=. python3 tools/cost_table.py --rounds 3 --out $OUT/cost-table.md \\
        tests/realworld/clean/hf_llama_infer.py tests/realworld/clean/hf_gpt2_train.py \\
        tests/realworld/clean/tv_resnet18_infer.py

`--cpu` runs the floor on the CPU and passes `--cpu` to lint and capture (a machine without a GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("floor", "lint", "capture-no-timing", "capture")
TITLES = {"floor": "floor", "lint": "lint", "capture-no-timing": "capture --no-timing", "capture": "capture"}
# exit statuses that mean the command did its work: lint 1 = error findings; capture 1 = did not capture, 3 = CPU only
DONE = {"floor": {0}, "lint": {0, 1}, "capture-no-timing": {0, 1, 3}, "capture": {0, 1, 3}}
EAGER_STEPS = 3

FLOOR = r"""
import sys
import torch
from cgtool.script.contract import load_script
script = load_script(sys.argv[1])
device = torch.device(sys.argv[2])
state = script.call_setup(device)
for i in range(int(sys.argv[3])):
    script.call_step(state, script.call_inputs(i, device))
if device.type == "cuda":
    torch.cuda.synchronize()
"""


@dataclass
class Run:
    seconds: float
    returncode: int
    tail: str = ""  # the last lines of stderr of a run that failed


@dataclass
class Results:
    """Every run, by script and mode, in the order they ran."""

    scripts: list[str]
    modes: list[str]
    runs: dict[tuple[str, str], list[Run]] = field(default_factory=dict)
    rounds: int = 0

    def add(self, script: str, mode: str, run: Run) -> None:
        self.runs.setdefault((script, mode), []).append(run)

    def median(self, script: str, mode: str) -> float | None:
        """The median wall time of the runs that did their work; None when none did."""
        ok = [r.seconds for r in self.runs.get((script, mode), []) if r.returncode in DONE[mode]]
        return statistics.median(ok) if ok else None


def command(script: str, mode: str, cpu: bool, out_dir: str) -> list[str]:
    """The command line of one run of `mode` on `script`."""
    py = sys.executable
    if mode == "floor":
        return [py, "-c", FLOOR, script, "cpu" if cpu else "cuda", str(EAGER_STEPS)]
    flags = ["--cpu"] if cpu else []
    if mode == "lint":
        return [py, "-m", "cgtool", "lint", script, *flags]
    timing = ["--no-timing"] if mode == "capture-no-timing" else []
    return [py, "-m", "cgtool", "capture", script, *timing, *flags, "-q", "--out", out_dir]


def run_command(cmd: list[str], timeout: float) -> Run:
    """Run `cmd` from this repository with its cgtool first on the path; its wall time and exit status."""
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p))
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return Run(time.perf_counter() - t0, -1, f"killed after {timeout:g} s (--timeout)")
    seconds = time.perf_counter() - t0
    return Run(seconds, r.returncode, "\n".join(r.stderr.strip().splitlines()[-5:]))


def measure(scripts: Sequence[str], modes: Sequence[str], rounds: int, run: Callable[[str, str, int], Run],
            time_limit: float | None = None, after_round: Callable[[Results], None] | None = None,
            log: Callable[[str], None] = lambda line: None, clock: Callable[[], float] = time.monotonic) -> Results:
    """`rounds` rounds, each running every mode of every script once, in order; stops before a round that would
    end past `time_limit` seconds (judged by the longest round so far)."""
    results = Results(list(scripts), list(modes))
    start, longest = clock(), 0.0
    for k in range(rounds):
        began = clock()
        if time_limit is not None and k and began - start + longest > time_limit:
            log(f"stopping after {k} round(s): another would pass --time-limit {time_limit:g} s")
            break
        for script in scripts:
            for mode in modes:
                done = run(script, mode, k)
                results.add(script, mode, done)
                failed = "" if done.returncode in DONE[mode] else f"  FAILED: {done.tail}"
                log(f"round {k + 1} {os.path.basename(script)} {mode}: {done.seconds:.2f} s, "
                    f"exit {done.returncode}{failed}")
        results.rounds = k + 1
        longest = max(longest, clock() - began)
        if after_round is not None:
            after_round(results)
    return results


def table(results: Results, about: str = "") -> str:
    """The markdown table: per script the median wall seconds of each mode (min-max), each ratio to the floor."""
    modes = results.modes
    head = ["script"]
    for mode in modes:
        head.append(f"{TITLES[mode]} (s)")
        if mode != "floor" and "floor" in modes:
            head.append(f"{TITLES[mode]} / floor")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for script in results.scripts:
        floor = results.median(script, "floor") if "floor" in modes else None
        row = [os.path.relpath(script, ROOT) if script.startswith(ROOT + os.sep) else script]
        for mode in modes:
            runs = results.runs.get((script, mode), [])
            median = results.median(script, mode)
            failed = sum(1 for r in runs if r.returncode not in DONE[mode])
            cell = "failed" if median is None else (
                f"{median:.2f} ({min(r.seconds for r in runs if r.returncode in DONE[mode]):.2f}–"
                f"{max(r.seconds for r in runs if r.returncode in DONE[mode]):.2f})")
            exits = sorted({r.returncode for r in runs})
            cell += f", exit {'/'.join(map(str, exits))}" if exits and exits != [0] else ""
            cell += f", {failed} of {len(runs)} failed" if failed and median is not None else ""
            row.append(cell)
            if mode != "floor" and "floor" in modes:
                row.append(f"{median / floor:.2f}×" if median is not None and floor else "n/a")
        lines.append("| " + " | ".join(row) + " |")
    note = (f"\nMedian wall time of a fresh process (min–max) over {results.rounds} round(s), the modes interleaved "
            f"({', '.join(TITLES[m] for m in modes)} for each script, every round). Floor: import torch, the "
            f"script's setup and {EAGER_STEPS} eager steps through cgtool's contract, synchronized.")
    return "\n".join(lines) + "\n" + note + (f"\n{about}" if about else "") + "\n"


def probe() -> tuple[str, str, str]:
    """(torch version, the device's name, cgtool's commit), asked once, in a process of their own."""
    code = ("import torch, json; print(json.dumps([torch.__version__, torch.cuda.get_device_name(0) "
            "if torch.cuda.is_available() else 'no CUDA device']))")
    try:
        torch_version, device = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                                          text=True, timeout=300).stdout)
    except (ValueError, subprocess.TimeoutExpired):
        torch_version, device = "?", "?"
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    return torch_version, device, commit


def environment(facts: tuple[str, str, str], cpu: bool) -> str:
    """One line: device, torch, cgtool's commit, the load average now."""
    torch_version, device, commit = facts
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"Device: {'cpu (--cpu)' if cpu else device}; torch {torch_version}; cgtool {commit}; "
            f"load average {load} (1, 5, 15 min) when the table was written.")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tools/cost_table.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("scripts", nargs="+", metavar="SCRIPT", help="scripts with setup()/inputs()/step()")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every mode of every script (default 3)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--cpu", action="store_true", help="the floor on the CPU, --cpu for lint and capture")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one run may take (default 600)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="start no round that would end later than this many seconds after the first")
    parser.add_argument("--out", default=None, help="write the markdown table here too (after every round)")
    parser.add_argument("--json", default=None, help="write every run (seconds, exit status) here as JSON")
    args = parser.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in args.modes if m not in MODES]
    if unknown or not args.modes:
        parser.error(f"--modes: {', '.join(unknown) or 'none given'} not one of {', '.join(MODES)}")
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    if args.timeout <= 0 or (args.time_limit is not None and args.time_limit <= 0):
        parser.error("--timeout and --time-limit take a number of seconds above 0")
    missing = [s for s in args.scripts if not os.path.isfile(s)]
    if missing:
        parser.error(f"no such script: {', '.join(missing)}")
    args.scripts = [os.path.abspath(s) for s in args.scripts]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    facts = probe()
    work = tempfile.mkdtemp(prefix="cgtool-cost-")

    def one(script: str, mode: str, k: int) -> Run:
        out_dir = os.path.join(work, f"{os.path.basename(script)}-{mode}-{k}")
        return run_command(command(script, mode, args.cpu, out_dir), args.timeout)

    def write(results: Results) -> None:
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(table(results, environment(facts, args.cpu)))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"rounds": results.rounds, "cpu": args.cpu, "runs": [
                    {"script": s, "mode": m, "seconds": r.seconds, "exit": r.returncode}
                    for (s, m), runs in results.runs.items() for r in runs]}, fh, indent=1)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        if "floor" in args.modes:  # one untimed floor first: torch's files and the models' libraries in the cache
            for script in args.scripts:
                one(script, "floor", -1)
        results = measure(args.scripts, args.modes, args.rounds, one, args.time_limit, write, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(table(results, environment(facts, args.cpu)))
    return 0 if all(results.median(s, m) is not None for s in results.scripts for m in results.modes) else 1


if __name__ == "__main__":
    sys.exit(main())
