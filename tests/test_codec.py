"""The one codec (cgtool/model/codec.py): every record writes the bytes the hand-written to_json methods wrote (golden
files in tests/data/codec/, made before the codec), reads them back to an equal record, and round-trips any record
Hypothesis builds; its rules (order, omission, renamed keys, hooks) on small records of its own."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codec_samples import samples
from cgtool.model.codec import Record, finite, is_empty, is_none, meta, null_as, reader
from cgtool.bench.estimate import Estimate
from cgtool.bench.stats import Stats
from cgtool.model.compiled import CompiledEvent, CompiledRun, CompileSite, GraphBreak, TreeFunction, TreeGraph
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.graph_memory import GraphMemory, SharedPool
from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.node_profile import EagerLine, NodeSource
from cgtool.model.partial import CallSpec, ModuleEntry, ModuleMap, Piece, Piecewise, SplitPoint
from cgtool.model.ranks import Collective, DdpWrap
from cgtool.model.report import ErrorRecord, ReplayCheck, Report, Skip, TensorDiff, Timings
from cgtool.model.trace import Iteration, OpRecord, Rebind, StreamEvent

GOLDEN = Path(__file__).parent / "data" / "codec"
SAMPLES = samples()


def dumped(value: Any) -> str:
    return json.dumps(value, indent=1) + "\n"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_writes_the_golden_bytes(name: str) -> None:
    assert dumped(SAMPLES[name].to_json()) == (GOLDEN / f"{name}.json").read_text()


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_reads_the_golden_file_back_to_the_same_bytes(name: str) -> None:
    record = SAMPLES[name]
    text = (GOLDEN / f"{name}.json").read_text()
    again = type(record).from_json(json.loads(text))
    assert dumped(again.to_json()) == text


def test_reads_every_older_report_schema() -> None:
    current = SAMPLES["report"].to_json()
    one = {k: v for k, v in current.items() if k not in ("piecewise", "modules", "compiled", "node_lines")}
    one.update(schema=1, skipped=["capture, graph, replay check and timing need a CUDA device", "no profiler"],
               findings=[{k: v for k, v in f.items() if k not in ("kind", "origin", "predicts", "reason")}
                         for f in current["findings"]])
    report = Report.from_json(one)
    assert report.piecewise is None and report.modules is None
    assert [(s.code, s.text) for s in report.skipped] == [
        ("no-cuda", "capture, graph, replay check and timing need a CUDA device"), ("unknown", "no profiler")]
    assert [f.reason for f in report.findings] == [None, None] and report.findings[0].rule == "CG101"
    with pytest.raises(ValueError, match="report schema 9"):
        Report.from_json({**current, "schema": 9})


def test_lint_schema_one_reads_and_an_unknown_one_is_refused() -> None:
    d = SAMPLES["lint_interrupted"].to_json()
    back = LintResult.from_json({**d, "schema": 1})
    assert (back.interrupted, back.stop, back.unchecked) == (True, "SIGTERM", ["c.py"])
    with pytest.raises(ValueError, match="lint result schema 3"):
        LintResult.from_json({**d, "schema": 3})


# --- the codec's own rules, on records of its own


@dataclass(frozen=True)
class _Inner(Record):
    a: int
    b: tuple[float, ...] = ()


@dataclass(frozen=True)
class _Outer(Record):
    JSON_ORDER = ("kind", "title", "inner", "half", "items", "maybe", "table", "pair")
    JSON_COMPUTED = {"kind": lambda _: "outer", "half": lambda o: o.inner.a / 2}

    name: str = field(metadata=meta(key="title"))
    inner: _Inner
    items: list[_Inner] = field(default_factory=list, metadata=meta(omit=is_empty))
    maybe: float | None = field(default=None, metadata=meta(omit=is_none))
    table: dict[str, tuple[int, int]] = field(default_factory=dict)
    pair: tuple[str, int] = ("x", 0)
    hidden: bool = field(default=False, metadata=meta(written=False))


def test_order_renamed_keys_omission_and_computed_keys() -> None:
    o = _Outer("n", _Inner(3, (1.5,)), table={"k": (1, 2)})
    assert list(o.to_json()) == ["kind", "title", "inner", "half", "table", "pair"]
    assert o.to_json() == {"kind": "outer", "title": "n", "inner": {"a": 3, "b": [1.5]}, "half": 1.5,
                           "table": {"k": [1, 2]}, "pair": ["x", 0]}
    back = _Outer.from_json({**o.to_json(), "hidden": True})
    assert back == _Outer("n", _Inner(3, (1.5,)), table={"k": (1, 2)}, hidden=True)
    assert isinstance(back.table["k"], tuple) and isinstance(back.inner.b, tuple)


def test_a_missing_required_key_is_a_key_error_and_ints_are_cast() -> None:
    with pytest.raises(KeyError, match="title"):
        _Outer.from_json({"inner": {"a": 1}})
    assert _Outer.from_json({"title": "t", "inner": {"a": "7", "b": [1]}}).inner == _Inner(7, (1.0,))


def test_a_field_left_out_of_json_order_is_refused() -> None:
    @dataclass(frozen=True)
    class Grown(Record):
        JSON_ORDER = ("a",)
        a: int
        new: int = 0

    with pytest.raises(TypeError, match=r"JSON_ORDER lacks \['new'\]"):
        Grown(1).to_json()


def test_unbounded_values_and_readers() -> None:
    assert finite(math.inf) is None and finite(2.0) == 2.0
    assert null_as(-math.inf)(None) == -math.inf
    assert reader(dict[str, list[tuple[int, ...]]])({"a": [[1, 2]]}) == {"a": [(1, 2)]}
    assert reader(int | None)(None) is None


# --- Hypothesis: to_json -> JSON text -> from_json gives the record back

text = st.text(max_size=8)
small = st.integers(-3, 1000)
real = st.floats(allow_nan=False, allow_infinity=False, width=32)
opt_text = st.none() | text
frames = st.builds(Frame, text, small, text, text)
findings = st.builds(Finding, text, text, st.sampled_from(["error", "warning", "info"]), text, opt_text,
                     st.none() | small, opt_text, opt_text, opt_text, opt_text, opt_text, opt_text, opt_text, opt_text,
                     opt_text)
errors = st.builds(ErrorRecord, text, text, text, st.lists(frames, max_size=2).map(tuple), opt_text,
                   st.lists(text, max_size=2).map(tuple))
tensors = st.builds(TensorDiff, text, st.lists(small, max_size=3).map(tuple), text, real, real, st.booleans(), real)
replays = st.builds(ReplayCheck, text, text, st.lists(tensors, max_size=2).map(tuple), text, small,
                    st.none() | small, st.lists(text, max_size=2).map(tuple))
timings = st.builds(Timings, real, real, small, st.none() | real, st.none() | real, text)
sites = st.builds(CompileSite, text, small, text, text, st.booleans(), text, text, text, text, st.booleans(),
                  st.none() | frames)
events = st.builds(CompiledEvent, text, text, text, st.none() | frames, small, text, text, text)
skips = st.builds(Skip, text, text)
piecewise = st.builds(Piecewise, text, text, st.lists(st.builds(SplitPoint, text, st.none() | frames, opt_text), max_size=2).map(tuple),
                      st.lists(st.builds(Piece, small, small, real), max_size=2).map(tuple), small, small, real, real,
                      st.lists(st.tuples(text, small), max_size=2).map(tuple), st.lists(text, max_size=2).map(tuple),
                      st.none() | replays, st.none() | timings, st.none() | errors, text, st.none() | small, st.none() | small)
calls = st.builds(CallSpec, st.lists(st.dictionaries(text, text, max_size=2), max_size=2).map(tuple),
                  st.dictionaries(text, small, max_size=2), st.booleans(), st.booleans(), st.booleans(), opt_text)
module_maps = st.builds(ModuleMap, text, small, st.lists(st.builds(ModuleEntry, text, text, small, text, text, st.just(()),
                                                                  st.booleans(), st.none() | small, st.none() | calls),
                                                        max_size=2).map(tuple),
                        st.lists(text, max_size=2).map(tuple), st.none() | replays, st.none() | timings, st.none() | errors,
                        text, st.lists(text, max_size=2).map(tuple), st.none() | replays)
compiled_runs = st.builds(CompiledRun, text, st.lists(sites, max_size=2), st.booleans(), st.just([]), st.lists(events, max_size=2),
                          st.just([]), small, st.none() | small, st.none() | small, st.none() | real, st.none() | real,
                          small, st.none() | small, st.none() | small, st.just([]), st.none() | small, st.none() | real, text,
                          st.dictionaries(text, real, max_size=2), text, st.none() | real, st.lists(text, max_size=2))
reports = st.builds(Report, text, text, text, text, st.dictionaries(text, text, max_size=2),
                    st.dictionaries(text, small, max_size=2), st.none(), st.none() | replays, st.none() | timings,
                    st.none() | st.builds(GraphMemory, small, small), st.none() | piecewise, st.none() | module_maps,
                    st.none() | compiled_runs, st.none(), st.lists(findings, max_size=2), st.lists(errors, max_size=2),
                    st.lists(skips, max_size=2), st.dictionaries(text, text, max_size=2), text, text)
stats = st.builds(Stats, small, *[real] * 11, small)
above, below = st.just(math.inf) | real, st.just(-math.inf) | real  # an estimate's unbounded sides
records = st.one_of(
    reports, piecewise, module_maps, compiled_runs, stats,
    st.builds(Estimate, above, below, above, real),
    st.builds(LintResult, st.lists(st.builds(ScriptResult, text), max_size=2), text, text, st.booleans(),
              st.sampled_from(["Ctrl-C", "SIGTERM", "SIGHUP"]), st.lists(text, max_size=2)),
    frames, findings, errors, tensors, replays, timings,
    skips,
    st.builds(GraphMemory, small, small, small, small, st.none() | small, st.none() | small),
    st.builds(SharedPool, st.lists(small, max_size=3).map(tuple), small, small, real, small),
    st.builds(SplitPoint, text, st.none() | frames, opt_text),
    st.builds(Piece, small, small, real),
    st.builds(ModuleEntry, text, text, small, text, text, st.lists(findings, max_size=2).map(tuple), st.booleans(),
              st.none() | small),
    sites,
    st.builds(GraphBreak, st.none() | frames, text, text, small, text),
    st.builds(TreeFunction, small, text, text, text, small, opt_text, small),
    events,
    st.builds(TreeGraph, small, small, small, small, st.lists(st.tuples(text, small), max_size=2).map(tuple), opt_text,
              opt_text),
    st.builds(StreamEvent, small, small, text, st.none() | small, st.none() | small, small),
    st.builds(Rebind, text, small, st.none() | st.booleans()),
    st.builds(OpRecord, text, text, st.lists(st.lists(small, max_size=2).map(tuple), max_size=2).map(tuple),
              st.lists(text, max_size=2).map(tuple), st.lists(text, max_size=2).map(tuple), small, small,
              st.none() | small, st.none() | st.booleans(), st.booleans(),
              st.none() | st.dictionaries(text, st.integers() | st.tuples(small, small), min_size=1, max_size=2),
              small, small),
    st.builds(NodeSource, small, text, small, small, text, text, st.none() | real.map(lambda x: round(x, 3))),
    st.builds(EagerLine, small, *[real.map(lambda x: round(x, 3))] * 3),
    st.builds(Collective, small, text, text, text, st.none() | st.booleans(), st.none() | frames, small),
    st.builds(DdpWrap, st.none() | frames, st.none() | st.booleans()),
    st.builds(ScriptResult, text, text, text, text, st.lists(findings, max_size=2), st.lists(text, max_size=2),
              st.lists(text, max_size=2), text, st.lists(text, max_size=2)),
    st.builds(Iteration, small, text, st.just([]), st.none() | small,
              st.dictionaries(text, st.lists(small, max_size=2).map(tuple), max_size=2), opt_text,
              st.lists(st.builds(Rebind, text, small, st.none() | st.booleans()), max_size=2)),
)


def _omitted_as_default(record: Any) -> Any:
    """What reads back for an OpRecord whose omitted keys hold values equal to "absent" (-1 and below, False)."""
    if isinstance(record, OpRecord):
        return OpRecord(record.kind, record.name, record.shapes, record.dtypes, record.devices, record.frame,
                        record.outer, record.stream, record.capturing, record.host, record.detail,
                        max(record.lib, -1), max(record.node, -1))
    if isinstance(record, CompiledEvent) and not record.function:  # a guard is written for a recompile's function
        return CompiledEvent(record.kind, record.reason, record.message, record.frame, record.count)
    if isinstance(record, LintResult) and not record.interrupted:  # what stopped a run is written when it stopped
        return LintResult(record.scripts, record.version, record.device, False, "Ctrl-C", record.unchecked)
    if isinstance(record, NodeSource):
        return NodeSource(record.node, record.op, max(record.frame, -1), max(record.lib, -1), record.module, record.how,
                          record.us)
    return record


@settings(max_examples=120, deadline=None)
@given(records)
def test_any_record_round_trips_through_json_text(record: Any) -> None:
    back = type(record).from_json(json.loads(json.dumps(record.to_json())))
    assert back == _omitted_as_default(record)
    assert json.dumps(back.to_json()) == json.dumps(record.to_json())
