"""`bench --nproc-per-node N`: every bench option either reaches the ranks' lockstep timing or is a usage error
before any rank starts (--budget-s, --ci and --l2-flush were dropped in silence). In process, no rank started."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

import cgtool.commands.distributed as distributed
from cgtool.commands.bench import bench
from cgtool.errors import CgtoolError, ExitCode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "samples", "distributed", "tensor_parallel.py")


@pytest.fixture
def started(monkeypatch):
    """The jobs bench handed to the ranks (capture_distributed stubbed: nothing runs)."""
    jobs = []

    def fake(job, nproc, timeout, out_dir, as_json, quiet, html_path=None):
        jobs.append(job)
        raise SystemExit(0)

    monkeypatch.setattr(distributed, "capture_distributed", fake)
    return jobs


def _bench(*args):
    return CliRunner().invoke(bench, ["--nproc-per-node", "2", SCRIPT, *map(str, args)])


@pytest.mark.parametrize("args, named", [(["--budget-s", "5"], "--budget-s"), (["--ci", "2"], "--ci"),
                                         (["--budget-s", "10", "--ci", "1"], "--budget-s and --ci")])
def test_stopping_rule_options_are_a_usage_error_on_ranks(started, args, named):
    r = _bench(*args)
    assert isinstance(r.exception, CgtoolError), r.output
    assert r.exception.exit_code == ExitCode.USAGE
    assert r.exception.message.startswith(f"{named} set") and "--nproc-per-node 2 runs the step on ranks" in r.exception.message
    assert "--iters N" in r.exception.message and started == []  # refused before any rank started


def test_l2_flush_reaches_the_ranks_timing(started):
    r = _bench("--l2-flush", "--iters", "7")
    assert r.exit_code == 0 and len(started) == 1, r.output
    settings = started[0].settings
    assert settings.timing_l2_flush is True and settings.timing_per_block == 7
    r = _bench()  # the defaults: no flush, 50 per block, and --budget-s / --ci left at theirs are no error
    assert r.exit_code == 0 and started[1].settings.timing_l2_flush is False
    assert started[1].settings.timing_per_block == 50


def test_lockstep_timing_flushes_before_every_call(monkeypatch):
    """The flush reaches time_block as its `before` (cgtool/bench/timing.py times each call on its own then)."""
    from types import SimpleNamespace

    import cgtool.bench.measure as measure
    import cgtool.pipeline.rank_timing as rank_timing

    flush = object()
    seen = []
    monkeypatch.setattr(measure, "l2_flusher", lambda: flush)
    monkeypatch.setattr(rank_timing, "time_block", lambda fn, n, stream, before=None: seen.append(before) or (1.0, 2.0))
    captured = SimpleNamespace(session=None, static_inputs=None, graph=SimpleNamespace(replay=lambda: None), stream=None)
    t = rank_timing.lockstep_timings(captured, blocks=2, per_block=3, l2_flush=True)
    assert seen == [flush] * 4 and "L2 cache flushed" in t.method
    seen.clear()
    t = rank_timing.lockstep_timings(captured, blocks=2, per_block=3)
    assert seen == [None] * 4 and "L2" not in t.method


@pytest.mark.parametrize("partial", [["--piecewise"], ["--modules", "1"]])
def test_bench_partial_refuses_the_options_it_does_not_use(monkeypatch, tmp_path, partial):
    """`bench --piecewise --l2-flush` (--sizes, --plot, --compare, --fail-if-slower) ran without them, silently."""
    import cgtool.commands.bench_partial as bench_partial

    monkeypatch.setattr(bench_partial, "bench_partial", lambda *a, **k: pytest.fail("the worker started"))
    script = tmp_path / "step.py"
    script.write_text("def step():\n    pass\n")
    r = CliRunner().invoke(bench, [str(script), *partial, "--l2-flush", "--sizes", "1,2", "--plot", str(tmp_path / "p.svg")])
    assert isinstance(r.exception, CgtoolError) and r.exception.exit_code == ExitCode.USAGE, r.output
    assert r.exception.message.startswith(f"--sizes, --plot, --l2-flush are not supported with {partial[0]}")
