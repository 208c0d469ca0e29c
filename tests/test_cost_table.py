"""tools/cost_table.py (issue 33's cost table, run on a GPU by the integrator): its arguments, its rounds
(interleaved, stopped by a time limit), its table, the commands it runs (flags the CLI has), and one real run of
the floor and lint on the CPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import cost_table  # noqa: E402
from cost_table import DONE, MODES, Results, Run, command, measure, parse_args, table  # noqa: E402

sys.path.remove(os.path.join(ROOT, "tools"))
TOOL = os.path.join(ROOT, "tools", "cost_table.py")
SAMPLE = os.path.join(ROOT, "samples", "mlp_inference.py")


@pytest.mark.parametrize("args, words", [
    ([], "the following arguments are required: SCRIPT"),
    ([SAMPLE, "--rounds", "0"], "--rounds must be 1 or more"),
    ([SAMPLE, "--modes", "floor,bench"], "--modes: bench not one of floor, lint, capture-no-timing, capture"),
    ([SAMPLE, "--timeout", "0"], "--timeout and --time-limit take a number of seconds above 0"),
    (["nowhere.py"], "no such script: nowhere.py"),
])
def test_bad_arguments_are_usage_errors(args, words, capsys):
    with pytest.raises(SystemExit) as stop:
        parse_args(args)
    assert stop.value.code == 2 and words in capsys.readouterr().err


def test_rounds_interleave_every_mode_and_stop_at_the_time_limit():
    order, now = [], [0.0]

    def run(script: str, mode: str, k: int) -> Run:
        order.append((k, os.path.basename(script), mode))
        now[0] += {"floor": 2.0, "lint": 3.0}.get(mode, 4.0)
        return Run(now[0] and {"floor": 2.0, "lint": 3.0}.get(mode, 4.0), 1 if mode == "capture" else 0)

    seen: list[int] = []
    results = measure(["/a.py", "/b.py"], list(MODES), 5, run, time_limit=60.0,
                      after_round=lambda r: seen.append(r.rounds), clock=lambda: now[0])
    # a round is 2 x (2 + 3 + 4 + 4) = 26 s: the third would end at 78 s, past the 60 s limit
    assert results.rounds == 2 and seen == [1, 2]
    assert order[:8] == [(0, "a.py", m) for m in MODES] + [(0, "b.py", m) for m in MODES]
    assert order[8:] == [(1, n, m) for n in ("a.py", "b.py") for m in MODES]
    assert results.median("/a.py", "lint") == 3.0 and results.median("/a.py", "capture") == 4.0  # exit 1 did its work


def test_the_table_gives_medians_ranges_and_ratios_to_the_floor():
    results = Results(["/x/a.py"], list(MODES), rounds=3)
    for floor, lint, quick, full in ((10.0, 12.0, 11.0, 20.0), (9.0, 11.0, 10.0, 19.0), (11.0, 13.0, 30.0, 18.0)):
        results.add("/x/a.py", "floor", Run(floor, 0))
        results.add("/x/a.py", "lint", Run(lint, 0))
        results.add("/x/a.py", "capture-no-timing", Run(quick, 0))
        results.add("/x/a.py", "capture", Run(full, 3))
    text = table(results, "Device: test")
    head, rule, row = text.splitlines()[:3]
    assert head == ("| script | floor (s) | lint (s) | lint / floor | capture --no-timing (s) | capture --no-timing / "
                    "floor | capture (s) | capture / floor |")
    assert rule == "|" + "---|" * 8
    assert row == ("| /x/a.py | 10.00 (9.00–11.00) | 12.00 (11.00–13.00) | 1.20× | 11.00 (10.00–30.00) | 1.10× | "
                   "19.00 (18.00–20.00), exit 3 | 1.90× |")
    assert "over 3 round(s)" in text and text.rstrip().endswith("Device: test")
    results.add("/x/a.py", "lint", Run(1.0, 4, "worker failed"))  # a run that failed counts in no median
    assert "12.00 (11.00–13.00), exit 0/4, 1 of 4 failed | 1.20×" in table(results)
    failed = Results(["/x/b.py"], ["floor", "lint"], rounds=1)
    failed.add("/x/b.py", "floor", Run(3.0, 1, "ImportError"))
    failed.add("/x/b.py", "lint", Run(5.0, 0))
    assert table(failed).splitlines()[2] == "| /x/b.py | failed, exit 1 | 5.00 (5.00–5.00) | n/a |"


def test_the_commands_use_options_the_cli_has():
    from cgtool.commands.capture import capture
    from cgtool.commands.lint import lint

    def options(cmd) -> set[str]:
        return {o for p in cmd.params for o in getattr(p, "opts", [])}

    for mode in MODES:
        for cpu in (False, True):
            argv = command(SAMPLE, mode, cpu, "/tmp/out")
            assert argv[0] == sys.executable
            if mode == "floor":
                assert argv[-3:] == [SAMPLE, "cpu" if cpu else "cuda", "3"]
                continue
            assert argv[1:4] == ["-m", "cgtool", "lint" if mode == "lint" else "capture"] and argv[4] == SAMPLE
            flags = [a for a in argv[5:] if a.startswith("-")]
            assert set(flags) <= options(lint if mode == "lint" else capture), flags
            assert ("--cpu" in flags) == cpu and ("--no-timing" in flags) == (mode == "capture-no-timing")
    assert DONE["floor"] == {0}


def test_a_real_run_of_the_floor_and_lint_on_the_cpu(tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text("import torch\n\n\ndef setup(device):\n    return {'w': torch.ones(4, 4, device=device)}\n\n\n"
                      "def inputs(i, device):\n    return {'x': torch.full((2, 4), float(i), device=device)}\n\n\n"
                      "def step(w, x):\n    return x @ w\n")
    out = tmp_path / "table.md"
    r = subprocess.run([sys.executable, TOOL, "--cpu", "--rounds", "1", "--modes", "floor,lint", "--out", str(out),
                        "--json", str(tmp_path / "runs.json"), str(script)], capture_output=True, text=True,
                       timeout=600, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    assert "round 1 tiny.py floor:" in r.stderr and "round 1 tiny.py lint:" in r.stderr
    row = r.stdout.splitlines()[2]
    assert row.startswith(f"| {script} | ") and row.endswith("× |") and "failed" not in row, r.stdout
    assert out.read_text() == r.stdout and "Device: cpu (--cpu); torch " in r.stdout
    assert cost_table.json.loads((tmp_path / "runs.json").read_text())["rounds"] == 1
