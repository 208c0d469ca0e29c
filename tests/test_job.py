"""The typed process boundary: a Job's settings per kind, their JSON, and the checks made when they are built."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cgtool.model.job import (BENCH, CAPTURE, PARTIAL, BenchSettings, CaptureSettings, Job, PartialSettings,
                              carry_over)


@pytest.mark.parametrize("job", [
    Job(CAPTURE, "/s.py", "step", CaptureSettings(warmup=5, node_lines=True, setup_fn=None), force_cpu=True),
    Job(BENCH, "/s.py", "fn", BenchSettings(sizes=(1, 8), iters=20, l2_flush=True), work_dir="/tmp/w"),
    Job(PARTIAL, "/s.py", "step", PartialSettings(piecewise=True, modules=2, keep_graphs=False)),
])
def test_a_job_survives_its_json(job: Job) -> None:
    back = Job.from_json(json.loads(json.dumps(job.to_json())))
    assert back == job and type(back.settings) is type(job.settings)


def test_a_job_without_settings_gets_its_kinds_defaults() -> None:
    assert Job(BENCH, "/s.py", "step").settings == BenchSettings()
    with pytest.raises(TypeError, match="a partial job takes PartialSettings, not CaptureSettings"):
        Job(PARTIAL, "/s.py", "step", CaptureSettings())


@pytest.mark.parametrize(("kind", "data", "error"), [
    (CaptureSettings, {"warmpu": 3}, "unknown setting warmpu for CaptureSettings; known: .*warmup"),
    (BenchSettings, {"piecewise": True}, "unknown setting piecewise for BenchSettings"),
    (CaptureSettings, {"warmup": "3"}, "setting warmup must be int, not '3'"),
    (CaptureSettings, {"timing": 1}, "setting timing must be bool, not 1"),
    (PartialSettings, {"modules": True}, "setting modules must be int | None, not True"),
    (CaptureSettings, {"warmup": -1}, "setting warmup must be >= 0"),
    (CaptureSettings, {"capture_mode": "local"}, "capture_mode must be one of global, thread_local, relaxed"),
])
def test_settings_from_json_refuse_what_the_kind_does_not_have(kind: type, data: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        kind.from_json(data)


def test_an_unknown_job_field_is_an_error() -> None:
    d = Job(CAPTURE, "/s.py", "step").to_json()
    with pytest.raises(ValueError, match="unknown job field extra"):
        Job.from_json({**d, "extra": 1})


def test_settings_are_frozen_and_changed_by_replace() -> None:
    s = CaptureSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.warmup = 4  # type: ignore[misc]
    assert dataclasses.replace(s, rank=1, world_size=2).world_size == 2 and s.world_size is None
    assert BenchSettings(sizes=[2, 4]).sizes == (2, 4)  # type: ignore[arg-type]  # JSON's list becomes a tuple


def test_carry_over_keeps_the_shared_fields() -> None:
    capture = CaptureSettings(warmup=7, timing=False, check_steps=2, node_lines=True, setup_fn="make")
    part = carry_over(capture, PartialSettings, piecewise=True, modules=None)
    assert (part.warmup, part.timing, part.check_steps, part.setup_fn, part.piecewise) == (7, False, 2, "make", True)


def test_a_job_result_survives_the_result_file(tmp_path) -> None:
    """child.write_result and client.read_result: one tagged type each way, a partial job's requests as fields."""
    from cgtool.bench.result import BenchReport
    from cgtool.model.partial import FAILED, ModuleMap, Piecewise
    from cgtool.model.report import ErrorRecord, Report
    from cgtool.pipeline.result import JobResult, PartialResult
    from cgtool.worker.child import write_result
    from cgtool.worker.client import read_result

    path = str(tmp_path / "result.json")
    for result in (JobResult(CAPTURE, report=Report("/s.py", "step", status="cpu-only")),
                   JobResult(BENCH, bench=BenchReport((), {"warmup": 3}, (), "0.1")),
                   JobResult(PARTIAL, partial=PartialResult(Piecewise(FAILED, "m", note="n"), ModuleMap(FAILED, 2),
                                                            [ErrorRecord("piecewise", "E", "boom")]),
                             rerun_piecewise="why", modules_pending=True)):
        write_result(path, result)
        back = read_result(path)
        assert back is not None and back.to_json() == result.to_json() and back.kind == result.kind
    with pytest.raises(ValueError, match="holds its own section and no other"):
        JobResult(CAPTURE, partial=PartialResult())
    (tmp_path / "result.json").write_text("[1]")
    assert read_result(path) is None


def test_the_job_file_holds_every_field_and_setting_by_name() -> None:
    """The codec writes what the worker reads: the job's fields in order, its settings as every field of the kind
    (tuples as lists), the same keys report.json's `settings` holds; a job file that is no object is an error."""
    job = Job(BENCH, "/s.py", "fn", BenchSettings(sizes=(1, 8), budget_s=5.0), work_dir="/w")
    d = job.to_json()
    assert list(d) == ["kind", "script", "entry", "settings", "force_cpu", "work_dir"]
    assert list(d["settings"]) == [f.name for f in dataclasses.fields(BenchSettings)]
    assert d["settings"]["sizes"] == [1, 8] and d["settings"] == job.settings.to_json()
    assert Job.from_json({**d, "settings": None}).settings == BenchSettings()
    with pytest.raises(ValueError, match="where an object belongs"):
        Job.from_json([d])  # type: ignore[arg-type]
