"""Node <-> line and replay times on graphs recorded on a GPU (tests/data/nodes/*.nodes.json.gz, written by
tests/gpu/record_nodes.py; its docstring has the format): the capture's per-op node counts are the truth the
kernel alignment is checked against."""

from __future__ import annotations

import glob
import gzip
import json
import os

import pytest

from cgtool.graph.model import Graph
from cgtool.graph.node_align import eager_sources, event_key, node_key, replay_times, timed_nodes
from cgtool.model.frame import Frame
from cgtool.model.node_profile import node_profile, rows_from_ops
from cgtool.model.trace import OpRecord

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sorted(glob.glob(os.path.join(HERE, "data", "nodes", "*.nodes.json.gz")))
needs_fixtures = pytest.mark.skipif(not FIXTURES, reason="no recorded fixtures: run tests/gpu/record_nodes.py on a GPU")
params = pytest.mark.parametrize("path", FIXTURES or ["none"], ids=lambda p: os.path.basename(p).split(".")[0])


def load(path: str) -> dict:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def replays_of(fx: dict) -> list[list[tuple[str, str, float]]]:
    return [[(e[0], e[1], e[2]) for e in r] for r in fx.get("replays", [])]


@needs_fixtures
@params
def test_replay_events_time_every_timed_node(path: str) -> None:
    fx = load(path)
    graph = Graph.from_json(fx["graph"])
    t = replay_times(graph, replays_of(fx))
    assert t.replays >= 3
    assert t.unmatched_nodes == 0, f"{t.unmatched_nodes} of {len(timed_nodes(graph))} nodes matched no event"
    assert abs(t.timed_us - t.replay_us) <= 0.10 * t.replay_us


@needs_fixtures
@params
def test_capture_node_counts_give_most_kernels_a_line(path: str) -> None:
    fx = load(path)
    if "capture_nodes" not in fx:
        pytest.skip("compiled: cgtool does not trace torch.compile's code")
    graph = Graph.from_json(fx["graph"])
    frames = [Frame.from_json(f) for f in fx["trace"]["frames"]]
    ops = [OpRecord.from_json(o) for o in fx["trace"]["ops"]]
    p = node_profile(graph, frames, ops, [tuple(r) for r in fx["capture_nodes"]], replay_times(graph, replays_of(fx)))
    assert p.kernels and p.kernels_mapped / p.kernels >= 0.95, p.unmapped
    top = p.totals("source")
    assert top and top[0].us > 0


@needs_fixtures
@params
def test_eager_alignment_agrees_with_the_capture_truth(path: str) -> None:
    fx = load(path)
    if "capture_nodes" not in fx or "eager" not in fx:
        pytest.skip("no capture truth or no eager profile")
    graph = Graph.from_json(fx["graph"])
    truth: dict[int, str] = {}
    for _, name, before, after, _module in fx["capture_nodes"]:
        for i in range(max(before, 0), after):
            truth.setdefault(i, name.rsplit(".", 1)[0] if name.count(".") > 1 else name)
    eager_ops = fx["eager"]["ops"]
    got = eager_sources(graph, [tuple(k) for k in fx["eager"]["kernels"]])
    both = [n for n in got if n in truth]
    agree = sum(1 for n in both if eager_ops[got[n]][0].replace("::", ".") == truth[n])
    kernels = [n.id for n in graph.kernels]
    assert len(both) >= 0.9 * len(kernels)
    assert agree >= 0.9 * len(both)


@needs_fixtures
def test_some_recorded_graph_replays_in_another_order_than_it_was_made() -> None:
    differs = []
    for path in FIXTURES:
        fx = load(path)
        graph = Graph.from_json(fx["graph"])
        keys = [node_key(n) for n in timed_nodes(graph)]
        if any([event_key(e[0], e[1]) for e in r] != keys for r in fx.get("replays", [])):
            differs.append(os.path.basename(path))
    assert differs


@needs_fixtures
@params
def test_the_tracers_node_counts_agree_with_the_recorders(path: str) -> None:
    """OpRecord.node (cgtool's tracer, while capturing) against the recorder's own count around each op."""
    fx = load(path)
    if "capture_nodes" not in fx:
        pytest.skip("compiled: cgtool does not trace torch.compile's code")
    ops = [OpRecord.from_json(o) for o in fx["trace"]["ops"]]
    n = len(fx["graph"]["nodes"])
    mine = {i: row[0] for row in rows_from_ops(ops, n) for i in range(row[2], row[3])}
    truth = {i: r[0] for r in fx["capture_nodes"] for i in range(max(r[2], 0), r[3])}
    assert mine and truth
    same = sum(1 for i, op in truth.items() if mine.get(i) == op)
    assert same >= 0.99 * len(truth)
