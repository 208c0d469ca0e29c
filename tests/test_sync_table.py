"""The sync table on the CPU: the condition language, the inference of conditions from observations, the
choice of the nearest torch version's table, and the CPU analysis following the table's conditions with the
arguments the GPU would see. The table used here is a HAND-WRITTEN FIXTURE (tests/data/sync_table_fixture/);
the shipped one is generated on a GPU (tools/sync_table.py, checked by tests/gpu/test_sync_table_gpu.py)."""

from __future__ import annotations

import os
import textwrap

import pytest

torch = pytest.importorskip("torch")

from cgtool.pipeline.cpu_analysis import analyze_on_cpu  # noqa: E402
from cgtool.script.contract import load_script  # noqa: E402
from cgtool.trace import op_recorder, sync_table  # noqa: E402
from cgtool.trace.sync_conditions import atoms, describe, features, holds, matching_clause  # noqa: E402
from cgtool.trace.sync_table import infer_conditions, load_table, table_path  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "sync_table_fixture")
aten = torch.ops.aten


def _device(t):
    return True


def test_features_name_schema_arguments():
    x, m = torch.zeros(3), torch.zeros(3, dtype=torch.bool)
    f = features(aten.masked_fill.Tensor, (x, m, torch.tensor(1.0)), {}, _device)
    assert f["value"] == ("device", 1, True) and f["self"][0] == "device"
    f = features(aten.masked_fill.Scalar, (x, m, 1.0), {}, _device)
    assert f["value"][0] == "number"
    f = features(aten.linalg_cholesky_ex.default, (torch.eye(2),), {"check_errors": True}, _device)
    assert f["check_errors"][0] == "true" and f["upper"][0] == "default"
    host = features(aten.masked_fill.Tensor, (x, m, torch.tensor(1.0)), {}, lambda t: t.dim() > 0)
    assert host["value"][0] == "host"


def test_atoms_and_holds_agree():
    f = features(aten.masked_fill.Tensor, (torch.zeros(8), torch.zeros(8, dtype=torch.bool), torch.tensor(1.0)), {}, _device)
    for a in atoms(f, {"self": [4, 16]}):
        assert holds(a, f), a
    assert holds("self:numel>=4", f) and not holds("self:numel>=16", f) and holds("self:numel<16", f)
    assert not holds("value:number", f) and holds("absent:default", f)
    assert matching_clause([["value:number"], ["value:device", "value:0d"]], f) == ["value:device", "value:0d"]
    assert describe([]) == "always"
    assert describe(["value:device", "num_classes:default"]) == "value is a device tensor and num_classes is not given"


def _obs(kind: str, synced: bool, numel: int = 4, flag: str = "default"):
    return ({"self": ("device", numel, False), "value": (kind, 1 if kind == "device" else -1, kind == "device"),
             "check_errors": (flag, -1, False)}, synced)


def test_infer_conditions_separates_arguments():
    assert infer_conditions([_obs("device", True), _obs("device", True)]) == ([[]], 0)
    assert infer_conditions([_obs("number", False)]) == ([], 0)
    clauses, unexplained = infer_conditions([_obs("device", True), _obs("number", False), _obs("host", False)])
    assert clauses == [["value:device"]] and unexplained == 0
    clauses, _ = infer_conditions([_obs("number", True, flag="true"), _obs("number", False, flag="false")])
    assert clauses == [["check_errors:true"]]


def test_infer_conditions_finds_a_size_switch_and_never_claims_a_clean_call():
    clauses, unexplained = infer_conditions([_obs("number", True, numel=4096), _obs("number", False, numel=16)])
    assert clauses == [["self:numel>=4096"]] and unexplained == 0
    clauses, unexplained = infer_conditions([_obs("number", True), _obs("number", False)])
    assert clauses == [] and unexplained == 1


def test_nearest_table_when_the_version_has_none(tmp_path):
    assert table_path("2.11.0+cu130", FIXTURE) == (os.path.join(FIXTURE, "sync_table-2.11.json"), True)
    assert table_path("2.13.0+cpu", FIXTURE) == (os.path.join(FIXTURE, "sync_table-2.11.json"), False)
    assert table_path("2.10.0", FIXTURE)[0] == os.path.join(FIXTURE, "sync_table-2.9.json")  # tie: the older
    assert table_path("2.11.0", str(tmp_path)) == (None, False)
    table = load_table("2.13.0+cpu", FIXTURE)
    assert table is not None and table.note and "2.11.0+fixture" in table.note and "2.13.0+cpu" in table.note
    assert load_table("2.11.1", FIXTURE).note is None


def test_the_shipped_tables_are_generated():
    """Every table shipped in cgtool comes from the generator (never a hand-written fixture)."""
    for name in os.listdir(sync_table.DATA_DIR) if os.path.isdir(sync_table.DATA_DIR) else ():
        if name.endswith(".json"):
            import json

            with open(os.path.join(sync_table.DATA_DIR, name)) as f:
                d = json.load(f)
            assert d["generated_by"] == "tools/sync_table.py" and "device" in d, name


STEP = '''
import torch


def setup(device):
    return {{}}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {{"x": torch.randn(16, 16, generator=g).to(device), "ids": torch.arange(8).to(device)}}


def step(x, ids):
    {body}
'''


def _lint_with_fixture(tmp_path, monkeypatch, body: str):
    monkeypatch.setattr(op_recorder, "load_table", lambda version: load_table(version, FIXTURE))
    path = tmp_path / "step.py"
    path.write_text(STEP.format(body=textwrap.indent(textwrap.dedent(body), "    ").strip()))
    trace, findings, errors = analyze_on_cpu(load_script(str(path)))
    assert not errors and trace.tracer_error is None, (errors, trace.tracer_error)
    return [f for f in findings if f.severity == "error"]


def test_fill_from_a_device_scalar_syncs_and_from_a_number_is_clean(tmp_path, monkeypatch):
    found = _lint_with_fixture(tmp_path, monkeypatch, """
        top = x.max()
        a = x.masked_fill(x < 0, top)  # the stand-in for a CUDA scalar tensor: a device tensor
        b = x.masked_fill(x < 0, -1e4)  # a Python number: masked_fill.Scalar, clean
        return a + b
    """)
    assert [f.rule for f in found] == ["CG101"], found
    assert "value is a device tensor" in found[0].message and "masked_fill" in found[0].message
    assert "no sync table for torch" in found[0].message  # the fixture is 2.11's; the CPU venv runs another torch


def test_fill_from_a_host_scalar_is_clean(tmp_path, monkeypatch):
    found = _lint_with_fixture(tmp_path, monkeypatch, """
        return x.masked_fill(x < 0, torch.tensor(-1e4))  # a host 0-dim tensor: no device read
    """)
    assert found == [], found


def test_linalg_and_ranges_and_membership(tmp_path, monkeypatch):
    found = _lint_with_fixture(tmp_path, monkeypatch, """
        spd = x @ x.T + 16 * torch.eye(16, device=x.device)
        L = torch.linalg.cholesky(spd)
        grid = torch.linspace(x.min(), x.max(), 8, device=x.device)
        stop = torch.isin(ids, ids[:2])
        fine = torch.linspace(0.0, 1.0, 8, device=x.device)
        return L.sum() + grid.sum() + stop.sum() + fine.sum()
    """)
    lines = sorted(f.line for f in found)
    assert [f.rule for f in found] == ["CG101"] * 3, found
    assert len(set(lines)) == 3
    text = " ".join(f.message for f in found)
    assert "_linalg_check_errors" in text and "linspace" in text and "isin" in text


def test_without_a_table_nothing_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(op_recorder, "load_table", lambda version: load_table(version, str(tmp_path / "none")))
    path = tmp_path / "step.py"
    path.write_text(STEP.format(body="return x.masked_fill(x < 0, x.max())"))
    _, findings, _ = analyze_on_cpu(load_script(str(path)))
    assert not [f for f in findings if f.severity == "error"]


OPT_STEP = '''
import torch
import torch.nn.functional as F


def setup(device):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8).to(device)
    opt = {make}
    return {{"model": model, "opt": opt}}


def inputs(i, device):
    return {{"x": torch.randn(4, 8, generator=torch.Generator().manual_seed(i)).to(device)}}


def step(model, opt, x):
    opt.zero_grad(set_to_none=False)
    F.mse_loss(model(x), x).backward()
    opt.step()
'''


@pytest.mark.parametrize("make, refused", [
    ("torch.optim.Adam(model.parameters(), fused=True)", True),  # fused is not capturable
    ("torch.optim.Adam(model.parameters(), capturable=True, foreach=True)", False),
    ("torch.optim.Adam(model.parameters(), fused=True, capturable=True)", False),
    ("torch.optim.Adam([{'params': [model.weight], 'capturable': True}, {'params': [model.bias]}])", True),
    ("torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)", False),  # no health check in SGD.step
])
def test_optimizer_capture_follows_torchs_health_check(tmp_path, make, refused):
    path = tmp_path / "step.py"
    path.write_text(OPT_STEP.format(make=make))
    _, findings, errors = analyze_on_cpu(load_script(str(path)))
    assert not errors, errors
    assert any(f.rule == "CG404" for f in findings) == refused, findings


def test_a_negative_number_is_its_own_atom():
    """one_hot(t, num_classes=-1) reads the data's max on CUDA, num_classes=10 does not."""
    neg = features(None, (torch.zeros(3),), {"num_classes": -1}, _device)
    pos = features(None, (torch.zeros(3),), {"num_classes": 10}, _device)
    assert holds("num_classes:number", neg) and holds("num_classes:number-neg", neg)
    assert holds("num_classes:number", pos) and not holds("num_classes:number-neg", pos)
    clauses, _ = infer_conditions([(neg, True), (pos, False), (features(None, (torch.zeros(3),), {}, _device), True)])
    assert matching_clause(clauses, neg) is not None and matching_clause(clauses, pos) is None


def test_generator_plumbing_on_cpu(tmp_path):
    """tools/sync_table.py end to end on the CPU, where nothing can sync: every sample runs and is recorded,
    the table is empty, the summary is written. (What syncs is only known on a GPU.)"""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sync_table_tool", os.path.join(os.path.dirname(__file__), "..",
                                                                                    "tools", "sync_table.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    result = tool.collect(device="cpu", ops=["masked_fill", "nn.functional.one_hot"])
    assert result["samples"] > 20 and result["errors"] == 0
    assert set(result["truth"].values()) == {False}
    assert "torch._C._nn.one_hot" in result["call_obs"] and "aten.masked_fill.Tensor" in result["obs"]
    table = tool.build_table(result, 1.0)
    assert table["ops"] == {} and table["calls"] == {} and table["dtypes"][0] == "torch.float32"
    path = tmp_path / "t.json"
    path.write_text("{}")
    assert "OpInfo ops 2" in tool.summary(table, str(path))


def test_as_tensor_of_a_host_tensor_onto_the_device_is_a_device_tensor(tmp_path):
    """ASGD(capturable=True, lr=torch.tensor(0.01)) makes its eta with torch.as_tensor(lr, device=p.device): a copy
    on the GPU, the same object on the CPU. The CPU run must not take eta for the host tensor lr."""
    path = tmp_path / "step.py"
    path.write_text(OPT_STEP.format(make="torch.optim.ASGD(model.parameters(), lr=torch.tensor(0.01), foreach=False, "
                                         "capturable=True)"))
    _, findings, errors = analyze_on_cpu(load_script(str(path)))
    assert not errors and not [f for f in findings if f.severity == "error"], findings


def test_index_lists_tell_a_bool_mask_from_integer_indices():
    x = torch.zeros(4, 4)
    mask = features(aten.index.Tensor, (x, [x[0] > 0]), {}, _device)
    ints = features(aten.index.Tensor, (x, [None, torch.tensor([0, 1])]), {}, _device)
    assert mask["indices"][0] == "tensors-device-bool" and ints["indices"][0] == "tensors-device"
    clauses, unexplained = infer_conditions([(mask, True), (ints, False)])
    assert clauses == [["indices:tensors-device-bool"]] and unexplained == 0


# ---- the shipped table (cgtool/trace/data/, generated on an H200 with torch 2.11) ---------------------------------
SYNC_STEPS = os.path.join(os.path.dirname(__file__), "..", "samples", "syncs")


def _shipped_findings(path: str) -> list:
    _, findings, errors = analyze_on_cpu(load_script(path))
    assert not errors, errors
    return [f for f in findings if f.severity == "error"]


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(SYNC_STEPS) if n.endswith(".py")))
def test_realistic_steps_are_found_at_their_line_with_the_shipped_table(name, monkeypatch):
    """Each realistic step of samples/syncs/ gives exactly the rules its `# expect:` markers name, at those lines;
    the clean one (no marker) gives nothing. tests/gpu/test_sync_table_gpu.py checks the same steps against
    plain PyTorch on a GPU."""
    from expect_markers import markers

    monkeypatch.delenv("CGTOOL_SYNC_TABLE_DIR", raising=False)
    sync_table._cache.clear()
    path = os.path.join(SYNC_STEPS, name)
    found = sorted({(f.line, f.rule) for f in _shipped_findings(path)})
    assert found == sorted(set(markers(path))), found


def test_python_level_syncs_are_in_the_shipped_table():
    """The syncs outside any aten op (torch's Python code: unravel_index's torch.tensor, indexing with a 0-dim
    tensor, torch.masked.* and torch.signal.windows.* building tensors from Python data) are Python-level entries
    with their conditions, matched by the call the tracer sees."""
    table = load_table("2.11")
    assert table is not None and table.python_level
    assert table.python_level["torch.functional.unravel_index"] == [[]]
    assert table.python_level["Tensor.__getitem__"] == [["arg1:python-list"]]  # x[:, [0, 3]]: the list is copied
    assert "torch.tensor" in table.python_level
    assert not any(k.startswith("aten._to_copy") for k in table.ops)  # a copy's direction is not in the table


def test_getitem_with_a_python_int_is_clean_and_with_a_device_scalar_syncs(tmp_path):
    path = tmp_path / "step.py"
    path.write_text(STEP.format(body="a = x[3] + x[ids.max()] + x[:, 1:3].sum()\n    return a + x[:, [0, 3]].sum()"))
    found = _shipped_findings(str(path))
    assert [(f.rule, f.line) for f in found] == [("CG101", 15), ("CG101", 16)], found
    assert "Python list" in found[1].message


def test_adagrad_with_its_host_step_count_captures(tmp_path):
    """Adagrad keeps its step count in a host tensor and has no capture health check: it captures on a GPU
    (callB, torch 2.11), so its host `.item()` is no finding."""
    path = tmp_path / "step.py"
    path.write_text(OPT_STEP.format(make="torch.optim.Adagrad(model.parameters(), foreach=False)"))
    assert _shipped_findings(str(path)) == []


def test_a_fused_kernel_without_cuda_refuses_the_stand_in_parameters():
    """torch 2.11's Adagrad(fused=True) raises for CUDA parameters (`_device_dtype_check_for_fused(p,
    cuda_unsupported=True)`); the CPU run's parameters stand for CUDA ones, so the stand-in raises as well."""
    from cgtool.trace.standins import CudaStandins

    import torch.optim.optimizer as optimizer

    p = torch.nn.Parameter(torch.randn(3))
    with CudaStandins():
        with pytest.raises(RuntimeError, match="but torch.float32 and cuda"):
            optimizer._device_dtype_check_for_fused(p, cuda_unsupported=True)
        optimizer._device_dtype_check_for_fused(p)
    optimizer._device_dtype_check_for_fused(p, cuda_unsupported=True)  # restored: the CPU is a fused device


def test_python_level_entries_from_a_tables_samples():  # the shipped table's: test_python_level_syncs_are_in_...
    """tools/sync_table.py --annotate: a table made before the generator kept Python-level syncs per call gets them
    from its samples that synced outside any aten op; size clauses (aten-level syncs in the same call) are left out."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sync_table_tool", os.path.join(os.path.dirname(__file__), "..",
                                                                                    "tools", "sync_table.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    table = {"python_level_syncs": ["unravel_index[torch.int16]#0", "__getitem__[torch.float32]#3",
                                    "masked.sum[torch.float32]#1", "api: isin"],
             "calls": {"torch.functional.unravel_index": {"when": [[]], "seen": 2, "synced": 2},
                       "Tensor.__getitem__": {"when": [["arg1:0d"], ["arg0:numel>=625", "arg1:other"]], "seen": 5,
                                              "synced": 3},
                       "torch.tensor": {"when": [[]], "seen": 9, "synced": 9}}}
    def no_op_db(*a, **k):
        raise ImportError("no op_db here")

    tool.opinfo_samples = no_op_db  # without the samples: the calls' own clauses, less those on sizes
    out = tool.python_level_from_labels(table)
    assert out["torch.functional.unravel_index"]["when"] == [[]]
    assert out["Tensor.__getitem__"]["when"] == [["arg1:0d"]]
    assert out["torch.tensor"]["examples"] == ["masked.sum"]


def test_a_capture_that_fails_at_a_syncing_op_is_that_sync():
    """GPU run: the tracer keeps the table's word as `table_sync` (no finding by itself); a capture that fails at
    that op's line is reported as the sync (CG101, confirmed, the capture error in the message), not as CG501."""
    from cgtool.checks.capture import check_capture_failure
    from cgtool.checks.sync import check_sync, sync_at_capture_failure
    from cgtool.model.finding import CONFIRMED
    from cgtool.model.frame import Frame
    from cgtool.model.report_parts import ErrorRecord
    from cgtool.model.trace import ATEN, Iteration, OpRecord, Trace

    at = Frame(file="step.py", line=9, function="step", source="u, s, v = torch.linalg.svd(a)")
    other = Frame(file="step.py", line=8, function="step", source="a = x @ x.T")
    op = OpRecord(ATEN, "aten._linalg_svd", ((16, 16),), ("float32",), ("cuda:0",), frame=0,
                  detail={"table_sync": "A has numel >=4", "sync_table": "2.11.0+cu130"})
    trace = Trace(device="cuda", frames=[at, other],
                  iterations=[Iteration(0, "capture", [OpRecord(ATEN, "aten.mm", frame=1), op])])
    assert check_sync(trace) == []  # the table alone makes no finding on the GPU run
    record = ErrorRecord("capture", "RuntimeError", "CUDA error: operation not permitted when stream is capturing",
                         (at,), "cudaErrorStreamCaptureUnsupported")
    found = sync_at_capture_failure(trace, record)
    assert [(f.rule, f.line, f.evidence) for f in found] == [("CG101", 9, CONFIRMED)]
    assert "_linalg_svd" in found[0].message and "operation not permitted" in found[0].message
    assert check_capture_failure(record, found) == []  # no CG501 beside it
    elsewhere = ErrorRecord("capture", "RuntimeError", "boom", (other,))
    assert sync_at_capture_failure(trace, elsewhere) == []


def test_the_hand_kept_aten_roles_against_the_shipped_table():
    """op_roles keeps roles the table cannot say. Where the table saw a listed op, it confirms it syncs (always, or
    under conditions the role's own refinement states: histc without a range, repeat_interleave without
    output_size, equal of matching sizes); the rest are ops sync debug mode never saw as the outermost aten op on
    CUDA in the float32 samples (is_nonzero and argwhere decompose; unique with a dim syncs inside thrust)."""
    import json

    from cgtool.trace import op_roles as R

    with open(os.path.join(sync_table.DATA_DIR, "sync_table-2.11.json")) as f:
        table = json.load(f)
    packets = {}
    for name, entry in table["ops"].items():
        packets.setdefault(name.rsplit(".", 1)[0], []).append(entry["when"])
    listed = R.SCALAR_READ_ATEN | R.DATA_DEPENDENT_ATEN | {R.REPEAT_ATEN}
    confirmed = sorted(n for n in listed if n in packets)
    assert {"aten._local_scalar_dense", "aten.equal", "aten.nonzero", "aten.masked_select", "aten._unique2",
            "aten.bincount", "aten.histc", "aten.unique_consecutive", "aten.repeat_interleave"} <= set(confirmed)
    assert packets["aten.nonzero"] == [[[]]] and packets["aten.bincount"] == [[[]]]  # always
    read = {k.rsplit(".", 1)[0] for k in sync_table.SyncTable.from_json(table).ops}
    assert "aten._to_copy" in packets and not (R.COPY_ATEN & read)  # copies: judged by direction, not the table


def test_one_hot_is_clean_with_num_classes_and_a_sync_without(tmp_path):
    """The shipped table: one_hot reads the data's max on CUDA unless num_classes is given (its input check runs
    on the CPU only); its entry has a sync its clause does not explain, so only an argument given clears it."""
    path = tmp_path / "step.py"
    path.write_text(STEP.format(body="a = torch.nn.functional.one_hot(ids, num_classes=8)\n"
                                     "    return a + torch.nn.functional.one_hot(ids)"))
    found = _shipped_findings(str(path))
    assert [(f.rule, f.line) for f in found] == [("CG101", 16)], found
