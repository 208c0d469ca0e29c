"""Fuzz the bench baseline loader (`cgtool bench --compare FILE`) with mutated real bench JSON: a report that
compares and renders, or a clean CgtoolError (exit 2, one line)."""

from __future__ import annotations

import json
import os

from fuzzing import DATA, dumps, examples, mutated, mutated_json, outcome, scratch, text_console
from hypothesis import given
from hypothesis import strategies as st

from cgtool.bench.compare import compare
from cgtool.bench.report_file import read_bench_report
from cgtool.render.bench import render_bench

_TMP = scratch("cgtool-fuzz-bench-")
with open(os.path.join(DATA, "bench_sweep.json"), "rb") as _fh:
    SEED = _fh.read()
DOC = json.loads(SEED)
CURRENT = read_bench_report(os.path.join(DATA, "bench_sweep.json"))


def load(data: bytes) -> None:
    path = os.path.join(_TMP, "baseline.json")
    with open(path, "wb") as fh:
        fh.write(data)
    baseline = outcome(read_bench_report, path)
    if baseline is not None:  # a loaded baseline must compare and render, as `bench --compare` does
        comparison = compare(CURRENT, baseline, pct=5.0)
        render_bench(CURRENT, text_console(), comparison)


@examples(200)
@given(mutated_json(DOC))
def test_mutated_fields(doc):
    load(dumps(doc))


@examples(120)
@given(mutated(SEED))
def test_mutated_bytes(data):
    load(data)


@examples(60)
@given(st.binary(max_size=300) | st.sampled_from([b"", b"[]", b"{}", b"null", b'"x"', b"[" * 100_000]))
def test_random_bytes(data):
    load(data)
