"""Issue 33: no decision reads a message. Every Finding message and every skipped entry's text is rewritten where it is
made (in this process and in every worker: a sitecustomize patches the records' constructors, so it reaches each
message-producing site, the `replace(f, message=...)` copies included), and real runs of the hazard samples must give
the same verdicts, exit codes and JSON, the messages aside."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from conftest import ROOT

from cgtool.model.finding import CONFIRMED, Finding
from cgtool.model.frame import Frame
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, ErrorRecord, ReplayCheck
from cgtool.model.rules import RULE_BY_ID, capture_error

# The rewrite: every character below U+2000 moves to the private-use area (U+E000 on), so no English word, backtick,
# colon or rule id survives, while equal messages stay equal and distinct ones distinct. Characters at U+2000 and above
# (a rewritten one included) stay: rewriting twice changes nothing, so text built from a rewritten message is consistent.
SITECUSTOMIZE = '''
import dataclasses

def _rewrite(text):
    return "".join(chr(ord(c) + 0xE000) if ord(c) < 0x2000 else c for c in text) if isinstance(text, str) else text

def _patch(cls, field):
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        object.__setattr__(self, field, _rewrite(getattr(self, field)))

    cls.__init__ = __init__

import cgtool.model.finding as _finding
import cgtool.model.report_parts as _parts

_patch(_finding.Finding, "message")
_patch(_parts.Skip, "text")
'''

HAZARDS = sorted(glob.glob(os.path.join(ROOT, "samples", "hazards", "*.py"))
                 + glob.glob(os.path.join(ROOT, "samples", "hazards", "multi", "*.py")))
REFUTED = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "refuted", "*.py")))
COMPILED = sorted(glob.glob(os.path.join(ROOT, "samples", "compiled", "*.py")))
# Samples whose CPU findings another sample of the lint below already gives (same rules, kinds, origins), or that
# give none (a message that is never made decides nothing): each costs a torch worker twice (~4 s of CPU, ~8 s for a
# compiled one) and exercises nothing the others do not. CPU lint of every sample (50 scripts): hazards by rule —
# CG101 item_sync (and guard_stream_generator, mask_item_host), CG102/CG402 mask_item_host, CG104/CG405/CG406
# reseed_rebind_sync, CG201/CG401 guard_stream_generator; compiled ones only CG701 (cpu_tensor: origin cpu-trace;
# sequential_compile: compiled), CG702 (many_sizes, python_int_input, varying_batch) and CG705 (break_*) warnings,
# eleven nothing. python_int_input and break_item are captured below (with --piecewise and --modules).
SAME_AS_ANOTHER = {
    "hazards": {"bool_mask", "cuda_synchronize", "custom_generator", "gradscaler_step", "host_to_input_device",
                "print_tensor", "rebind_dict_state", "reseed_in_step", "tensor_branch", "uncaptured_work",
                "clean_dropout_train", "clean_ema_inplace", "clean_mlp_inference", "clean_train_adamw",
                "clean_two_streams"},
    "compiled": {"break_item", "break_print", "clean_training", "control_flow_cond", "imported_decorator",
                 "imported_factory", "input_mutation", "module_compile", "no_cudagraphs", "output_overwritten",
                 "pending_backward", "python_int_input", "rerecord_static_input", "varying_batch"},
}



@pytest.fixture(scope="module")
def rewritten_env(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("rewrite")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return {"PYTHONPATH": os.pathsep.join([str(folder), ROOT])}


def _cli(args: list[str], cwd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": ROOT, **(env or {})}
    return subprocess.run([sys.executable, "-m", "cgtool", *args], cwd=cwd, capture_output=True, text=True,
                          env=full, timeout=1500)


def _kept(paths: list[str], group: str) -> list[str]:
    return [p for p in paths if os.path.basename(p)[:-3] not in SAME_AS_ANOTHER[group]]


def test_the_samples_left_out_of_the_lint_mark_no_rule_the_others_do_not():
    """What the lint below leaves out (SAME_AS_ANOTHER) is each named, and every hazard its `# expect:` markers name
    is marked in a sample the lint keeps: a sample with a new rule is linted."""
    from expect_markers import markers

    names = {g: {os.path.basename(p)[:-3] for p in paths} for g, paths in (("hazards", HAZARDS), ("compiled", COMPILED))}
    assert SAME_AS_ANOTHER["hazards"] <= names["hazards"] and SAME_AS_ANOTHER["compiled"] <= names["compiled"]
    kept = {rule for p in _kept(HAZARDS, "hazards") + REFUTED for _, rule in markers(p)}
    left = {rule for p in HAZARDS if p not in _kept(HAZARDS, "hazards") for _, rule in markers(p)}
    assert left <= kept, left - kept


def _without_messages(data: Any, path: str = "") -> Any:
    """`data` with every finding message, every skipped text, and what is made of finding messages (a piecewise
    split's reason on CPU is its finding's message) left out; the run's own times and paths too."""
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            where = f"{path}.{k}"
            if k == "message" or (k == "text" and "skipped" in path) or (k == "reason" and ".splits" in path):
                continue
            if k in ("environment", "script_output", "outputs", "cgtool_version") or k.endswith("_ms"):
                continue
            out[k] = _without_messages(v, where)
        return out
    if isinstance(data, list):
        return [_without_messages(v, path) for v in data]
    return data


def _rewritten(text: str) -> bool:
    return bool(text) and all(ord(c) >= 0x2000 for c in text if not c.isspace())


def test_the_rewrite_reaches_every_message_in_this_process(rewritten_env):
    """The sitecustomize itself: a Finding made by `finding()`, a copy made by `replace`, a Skip."""
    code = textwrap.dedent("""
        from dataclasses import replace
        from cgtool.model.rules import finding
        from cgtool.model.report_parts import Skip, NO_CUDA
        f = finding("CG101", "`.item()` reads a GPU value on the host")
        g = replace(f, message=f.message + " (more)")
        print(repr((f.message, g.message, Skip(NO_CUDA, "needs a CUDA device").text, f.rule, f.predicts)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, **rewritten_env)).stdout
    message, copy, skip, rule, predicts = eval(out)  # noqa: S307 (our own repr)
    assert _rewritten(message) and _rewritten(copy) and _rewritten(skip), out
    assert "item" not in message and copy.startswith(message) and (rule, predicts) == ("CG101", "capture-fails")


def test_lint_of_every_sample_is_the_same_with_every_message_rewritten(rewritten_env, tmp_path):
    """CPU lint of samples/hazards (multi included), tests/data/refuted and samples/compiled: the same exit code and the
    same JSON (rules, kinds, origins, predictions, severities, lines, skipped rules, script errors), messages aside."""
    scripts = _kept(HAZARDS, "hazards") + REFUTED + _kept(COMPILED, "compiled")
    args = ["lint", *scripts, "--format", "json", "-j", "2", "--timeout", "1200"]  # room on a loaded machine
    plain = _cli(args, str(tmp_path))
    rewritten = _cli(args, str(tmp_path), rewritten_env)
    assert plain.returncode == rewritten.returncode == 1, (plain.returncode, rewritten.returncode, rewritten.stderr)
    a, b = json.loads(plain.stdout), json.loads(rewritten.stdout)
    found = [f for s in b["scripts"] for f in s["findings"]]
    assert len(found) >= 25 and all(_rewritten(f["message"]) for f in found)  # the rewrite reached the workers
    assert {f["kind"] for f in found} >= {"python-number", "pageable-copy"}  # the kinds the decisions read
    assert [(s["path"], s["status"], s["errors"]) for s in a["scripts"]] == [
        (s["path"], s["status"], s["errors"]) for s in b["scripts"]]
    assert all(s["status"] == "analysed" for s in a["scripts"]), [s for s in a["scripts"] if s["errors"]]
    assert _without_messages(a) == _without_messages(b)
    # and the verdicts that a GPU run would give these findings, judged here against every outcome
    assert _verdicts(_findings(a)) == _verdicts(_findings(b))


@pytest.mark.parametrize("script", [os.path.join(ROOT, "samples", "hazards", "multi", "mask_item_host.py"),
                                    *REFUTED, os.path.join(ROOT, "samples", "compiled", "python_int_input.py"),
                                    os.path.join(ROOT, "samples", "compiled", "break_item.py")],
                         ids=os.path.basename)
def test_capture_on_cpu_is_the_same_with_every_message_rewritten(rewritten_env, tmp_path, script):
    """`cgtool capture` on the CPU (the CPU analysis, the compiled step under dynamo, --piecewise's split points and
    --modules' map from the findings): the same exit code and report.json, skipped entries as records, messages
    aside."""
    from concurrent.futures import ThreadPoolExecutor

    def capture(name: str, env: dict[str, str] | None) -> tuple[int, dict]:
        out = tmp_path / name
        r = _cli(["capture", script, "--out", str(out), "--piecewise", "--modules", "1", "-q"], str(tmp_path), env)
        return r.returncode, json.loads((out / "report.json").read_text())

    with ThreadPoolExecutor(2) as pool:  # the two runs side by side: one worker each, a core each
        runs = list(pool.map(capture, ("plain", "rewritten"), (None, rewritten_env)))
    (code_a, a), (code_b, b) = runs
    assert code_a == code_b, (code_a, code_b)
    assert a["skipped"] and all(_rewritten(s["text"]) for s in b["skipped"]) and all(s["code"] for s in b["skipped"])
    assert _without_messages(a) == _without_messages(b)


def test_the_whole_step_after_a_failed_capture_is_judged_the_same(rewritten_env, monkeypatch):
    """A failed GPU capture (written by hand) completed with the real CPU analysis of the whole step, in a worker
    whose messages are all rewritten: the same findings with the same evidence."""
    from cgtool.model.job import CAPTURE, CaptureSettings, Job
    from cgtool.model.report import Report
    from cgtool.model.rules import finding
    from cgtool.worker.whole_step import complete_report

    script = os.path.join(ROOT, "samples", "hazards", "multi", "mask_item_host.py")

    def run() -> list[tuple]:
        report = Report(script=script, entry="step", status=CAPTURE_FAILED, device="cuda")
        report.errors.append(ErrorRecord("capture", "RuntimeError", "operation not permitted when stream is capturing",
                                         (Frame(script, 23, "step", "kept = y[y > 0]"),),
                                         "cudaErrorStreamCaptureUnsupported", (f"{script}:20",)))
        report.findings.append(finding("CG102", "boolean-mask indexing", file=script, line=23, evidence=CONFIRMED))
        job = Job(CAPTURE, script, "step", CaptureSettings(warmup=3, timing=False, checks=True))
        done = complete_report(job, report, timeout=300)
        return [(f.rule, f.line, f.kind, f.origin, f.evidence, f.severity, f.predicts, f.reason) for f in done.findings]

    plain = run()
    monkeypatch.setenv("PYTHONPATH", rewritten_env["PYTHONPATH"])
    assert run() == plain
    assert [(r, e) for r, _, _, _, e, *_ in plain] == [("CG102", "confirmed"), ("CG101", "not-reached"),
                                                        ("CG402", "not-reached")]


def _findings(lint: dict[str, Any]) -> list[Finding]:
    return [Finding.from_json(f) for s in lint["scripts"] for f in s["findings"]]


def _verdicts(findings: list[Finding]) -> list[tuple]:
    """(evidence, severity, reason) of each finding under each outcome a GPU run can have: captured with replay
    matching, differing or unchecked; a capture that failed at the finding's line; one that failed elsewhere with the
    error its rule or kind names; one that got past its line and failed at a later confirmed one; and the whole-step
    completion of a failed capture."""
    from cgtool.checks.verdict import complete_with_whole_step, judge

    match, mismatch = ReplayCheck("match", "inputs(4), fresh"), ReplayCheck("mismatch", "inputs(4), fresh")
    out: list[tuple] = []
    for replay in (match, mismatch, None):
        out += [(f.evidence, f.severity, f.reason) for f in judge(findings, CAPTURED, None, replay)]
    for f in findings:
        here = Frame(f.file or "s.py", f.line or 1, f.function or "step", f.source or "")
        error = capture_error(f) or "operation not permitted when stream is capturing"
        at_line = ErrorRecord("capture", "RuntimeError", error, (here,), "cudaErrorStreamCaptureUnsupported")
        elsewhere = ErrorRecord("capture", "RuntimeError", f"CUDA error: {error}", (Frame("other.py", 99, "f", ""),))
        later = ErrorRecord("capture", "RuntimeError", "operation failed due to a previous error during capture",
                            (Frame("later.py", 5, "step", ""),), None, (f"{f.file}:{f.line}",))
        confirmed_later = Finding("CG104", "sync", "error", "x", "later.py", 5, predicts="capture-fails")
        for failure in (at_line, elsewhere, later):
            out += [(g.rule, g.evidence, g.severity, g.reason) for g in judge([f, confirmed_later], CAPTURE_FAILED,
                                                                             failure, None)]
            out += [(g.rule, g.evidence, g.severity, g.reason)
                    for g in complete_with_whole_step([replace_evidence(confirmed_later)], [f], failure)]
    assert any(r[0] == "refuted" for r in out) and any(r[1] == CONFIRMED for r in out if len(r) == 4)
    return out


def replace_evidence(f: Finding) -> Finding:
    from dataclasses import replace

    return replace(f, evidence=CONFIRMED)


def test_every_kind_belongs_to_its_rule():
    """The kinds the checks give exist on their rules (finding() refuses others), and what each predicts is data."""
    from cgtool.model.rules import PAGEABLE_COPY, PYTHON_NUMBER, UNCAPTURED_WAIT, finding

    assert finding("CG402", kind=PAGEABLE_COPY).predicts == "capture-fails"
    assert finding("CG402", kind=PYTHON_NUMBER).predicts == "replay-differs"
    assert finding("CG201", kind=UNCAPTURED_WAIT).predicts == "capture-fails"
    assert finding("CG201").predicts == "replay-differs" and finding("CG501").predicts is None
    assert capture_error(finding("CG203")) == RULE_BY_ID["CG203"].capture_error
    with pytest.raises(ValueError):
        finding("CG101", kind=PAGEABLE_COPY)
