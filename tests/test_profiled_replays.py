"""pipeline/gpu_run.py: profiled_replay_times, the one reading of the profiled replays behind both node-line paths
(node_lines for cgtool's own capture, compiled_lines.compiled_node_lines for compiled code), on CPU with the
profiler stood in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cgtool.model.report import CAPTURED, Report
from cgtool.model.report_parts import NODE_LINES, PROFILER_FAILED
from test_node_lines_render import REPLAY
from test_node_profile import FRAMES, GRAPH, OPS


def _report() -> Report:
    return Report(script="step.py", entry="step", status=CAPTURED, device="cuda", graph=GRAPH)


@pytest.fixture
def profiler(monkeypatch):
    """The profiler's three readers stood in; `fail` makes profile_replays raise."""
    import cgtool.capture.inductor_modules as inductor_modules
    import cgtool.capture.kernel_split as kernel_split
    import cgtool.capture.replay_profile as replay_profile
    import cgtool.capture.timeline_events as timeline_events

    state = SimpleNamespace(fail=False, timelines=[])

    def profile_replays(graph):
        if state.fail:
            raise RuntimeError("CUPTI busy")
        return "replays"

    monkeypatch.setattr(replay_profile, "profile_replays", profile_replays)
    monkeypatch.setattr(kernel_split, "replay_events", lambda replays: [REPLAY] * 3)
    monkeypatch.setattr(timeline_events, "timeline", lambda graph, replays, eager=None: state.timelines.append(replays))
    monkeypatch.setattr(inductor_modules, "generated_modules", lambda: [])
    return state


def _own(report: Report):
    from cgtool.pipeline.gpu_run import node_lines

    trace = SimpleNamespace(iterations=[SimpleNamespace(phase="capture", ops=OPS, index=0)], frames=FRAMES)
    return node_lines(SimpleNamespace(graph=None), GRAPH, trace, report)


def _compiled(report: Report):
    from cgtool.pipeline.compiled_lines import compiled_node_lines

    return compiled_node_lines(SimpleNamespace(graph=None), GRAPH, report)


@pytest.mark.parametrize("lines", [_own, _compiled])
def test_replay_times_reach_the_nodes_and_the_timeline(profiler, lines) -> None:
    report = _report()
    profile = lines(report)
    assert [n.us for n in profile.nodes] == [30.0, 5.0, 1.0, 4.0, 2.0]
    assert profiler.timelines == ["replays"]
    assert not [s for s in report.skipped if s.code == PROFILER_FAILED]
    assert "node_lines" in report.phase_ms


@pytest.mark.parametrize("lines", [_own, _compiled])
def test_a_failed_profiler_is_a_skip_and_no_times(profiler, lines) -> None:
    profiler.fail = True
    report = _report()
    profile = lines(report)
    assert all(n.us is None for n in profile.nodes) and profiler.timelines == []
    failed = [s.text for s in report.skipped if s.code == PROFILER_FAILED]
    assert failed == ["replay time per node: the profiler failed (RuntimeError: CUPTI busy)"]
    if lines is _compiled:  # no generated module of inductor stood in
        assert [s.code for s in report.skipped if s.code == NODE_LINES] == [NODE_LINES]
