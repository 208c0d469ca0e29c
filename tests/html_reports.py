"""Reports for the HTML tests, from real data:

- a captured step with node lines: a graph recorded on an H200 (tests/data/nodes/*.nodes.json.gz, the capture
  iteration's trace and 5 profiled replays) turned into report.json's `graph` and `node_lines` by cgtool's own
  code (node_profile, replay_times, eager_lines), as the GPU pipeline does (cgtool/pipeline/gpu_run.py). The
  fixture holds no eager-versus-replay timing, so the report has none; everything shown was recorded;
- a bench sweep (tests/data/bench_sweep.json, sizes 1 and 8) with the capture-size plan `bench` computes for
  `--batch-range 1:8` (compare_plans, as commands/bench.py's finish() writes it into the JSON).
CPU runs of the samples (capture, lint, the 2-rank run) are made by the tests themselves.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any

from cgtool.graph.model import Graph
from cgtool.graph.node_align import replay_times
from cgtool.model.frame import Frame
from cgtool.model.node_profile import eager_lines, node_profile
from cgtool.model.report import CAPTURED, Report
from cgtool.model.trace import OpRecord

HERE = os.path.dirname(os.path.abspath(__file__))
NODES = os.path.join(HERE, "data", "nodes")
ROOT = os.path.dirname(HERE)


def gpu_report(name: str = "hf_gpt2_train") -> Report:
    """report.json's view of a step captured on a GPU: the graph, each node's line, module and replay time."""
    with gzip.open(os.path.join(NODES, f"{name}.nodes.json.gz"), "rt") as fh:
        fx = json.load(fh)
    graph = Graph.from_json(fx["graph"])
    frames = [Frame.from_json(f) for f in fx["trace"]["frames"]]
    ops = [OpRecord.from_json(o) for o in fx["trace"]["ops"]]
    times = replay_times(graph, [[(e[0], e[1], e[2]) for e in r] for r in fx["replays"]])
    profile = node_profile(graph, frames, ops, [tuple(r) for r in fx["capture_nodes"]], times)
    outer = fx["eager"]["outer"]
    profile.eager = eager_lines(profile, graph, [tuple(k) for k in outer["kernels"]], outer["cpu_us"])
    env = {"gpu": fx["gpu"], "capability": "9.0", "torch": fx["torch"], "python": "3.12"}  # H200: sm 9.0
    return Report(script=fx["script"], entry="step", status=CAPTURED, device="cuda", environment=env, graph=graph,
                  node_lines=profile, settings={"warmup": 3, "recorded_by": "tests/gpu/record_nodes.py",
                                                "timing": "not in the recorded fixture (tests/data/nodes)"},
                  cgtool_version="0.1.0")


def bench_with_plan() -> dict[str, Any]:
    """The bench JSON of a two-size sweep with the plan for batches 1..8 in it, as `bench --out` writes it."""
    from cgtool.bench.result import BenchReport
    from cgtool.bench.size_plan import compare_plans, model_of_report, range_histogram

    with open(os.path.join(HERE, "data", "bench_sweep.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    plans = compare_plans(model_of_report(BenchReport.from_json(doc)), range_histogram(1, 8), float("inf"))
    doc["plan"] = {"budget_bytes": None, "sets": [{"label": label, **p.to_json()} for label, p in plans]}
    return doc
