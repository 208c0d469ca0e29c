from lint_samples import BROKEN, GPU_ONLY, ITEM_SYNC, MASK_INDEX, SIDE_STREAM, cpu_result, cuda_result

from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import RULE_BY_ID, finding
from cgtool.render.text import render_text, summary_line


def test_each_finding_shows_location_rule_source_and_fix():
    lines = render_text(cpu_result()).splitlines()
    i = lines.index(f"{ITEM_SYNC}:14: error: CG101 [sync] {RULE_BY_ID['CG101'].title}")
    assert lines[i + 1] == "    if loss.item() > 10.0:"
    assert lines[i + 2] == f"    fix: {RULE_BY_ID['CG101'].hint}"
    assert f"{MASK_INDEX}:9: error: CG102 [sync] boolean-mask indexing x[mask] makes the output size depend on the data" \
        in lines


def test_script_errors_summary_and_skipped_rules():
    out = render_text(cpu_result())
    assert f"{BROKEN}: error: ModuleNotFoundError: No module named 'apex' (line 3)" in out
    assert "4 scripts checked on cpu: 3 errors, 0 warnings in 2 scripts; 1 script could not be analysed." in out
    tail = out.split("Not checked on this machine (no CUDA device: these rules need a captured graph):\n", 1)[1]
    assert [line.split()[0] for line in tail.splitlines()] == sorted(GPU_ONLY)
    assert f"  CG503 {RULE_BY_ID['CG503'].title}" in tail


def test_plain_text_has_no_ansi_and_colour_has():
    assert "\x1b[" not in render_text(cpu_result())
    coloured = render_text(cpu_result(), color=True)
    assert "\x1b[" in coloured and "CG101 [sync]" in coloured


def test_brackets_in_messages_and_sources_are_not_markup():
    f = finding("CG102", "x[mask] drops [bold] rows [/]", file=MASK_INDEX, line=4, source="y = x[mask][0]")
    out = render_text(LintResult([ScriptResult(MASK_INDEX, findings=[f])]), color=True)
    assert "x[mask] drops [bold] rows [/]" in out and "y = x[mask][0]" in out


def test_long_lines_are_not_wrapped():
    long_source = "    loss = " + " + ".join(f"term_{i}.item()" for i in range(30))
    f = finding("CG101", file=ITEM_SYNC, line=30, source=long_source)
    out = render_text(LintResult([ScriptResult(ITEM_SYNC, findings=[f])]), width=60)
    assert "    " + long_source.strip() in out.splitlines()


def test_a_finding_without_file_names_its_script():
    out = render_text(LintResult([ScriptResult(SIDE_STREAM, device="cuda", findings=[finding("CG502")])],
                                 device="cuda"))
    assert out.splitlines()[0] == f"{SIDE_STREAM}: warning: CG502 [empty-graph] {RULE_BY_ID['CG502'].title}"


def test_a_gpu_run_lists_nothing_skipped():
    out = render_text(cuda_result())
    assert "2 scripts checked on cuda: 1 error, 1 warning in 1 script." in out
    assert "Not checked" not in out


def test_a_clean_run_is_one_line():
    out = render_text(LintResult([ScriptResult("samples/train_step.py", device="cuda")], device="cuda"))
    assert out == "1 script checked on cuda: 0 errors, 0 warnings.\n"


def test_each_finding_says_its_severity():
    findings = [finding("CG101", file=ITEM_SYNC, line=1), finding("CG502", file=ITEM_SYNC, line=2),
                finding("CG101", file=ITEM_SYNC, line=3, severity="info")]
    lines = render_text(LintResult([ScriptResult(ITEM_SYNC, findings=findings)])).splitlines()
    assert [ln.split(": ")[1] for ln in lines if ln.startswith(ITEM_SYNC)] == ["error", "warning", "note"]


def test_an_interrupted_run_says_so_and_what_was_not_checked():
    r = LintResult([ScriptResult(ITEM_SYNC, findings=[finding("CG101", file=ITEM_SYNC, line=1)])],
                   interrupted=True, unchecked=[MASK_INDEX, SIDE_STREAM])
    assert r.exit_code == 130
    out = render_text(r)
    assert f"{ITEM_SYNC}:1: error: CG101" in out
    assert "1 script checked on cpu: 1 error, 0 warnings in 1 script; interrupted (Ctrl-C): 2 scripts not checked." in out


def test_summary_counts_notes():
    r = LintResult([ScriptResult(ITEM_SYNC, findings=[finding("CG101", file=ITEM_SYNC, line=1, severity="info")])])
    assert summary_line(r) == "1 script checked on cpu: 0 errors, 0 warnings, 1 note in 1 script."
