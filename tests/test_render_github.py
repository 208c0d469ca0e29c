import re

import pytest
from lint_samples import BROKEN, GPU_ONLY, ITEM_SYNC, SIDE_STREAM, cpu_result, cuda_result

from cgtool.model.lint_result import LintResult, ScriptResult
from cgtool.model.rules import finding
from cgtool.render.github import escape_data, escape_property, render_github, workflow_command

COMMAND = re.compile(r"^::(?P<cmd>[a-z]+)(?: (?P<props>[^:]*))?::(?P<msg>.*)$")


def unescape(s: str) -> str:
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """Split one workflow command the way the Actions runner does."""
    m = COMMAND.match(line)
    assert m, line
    props = {}
    for pair in (m.group("props") or "").split(","):
        if pair:
            key, value = pair.split("=", 1)
            props[key] = unescape(value)
    return m.group("cmd"), props, unescape(m.group("msg"))


def annotations(text: str) -> list[tuple[str, dict[str, str], str]]:
    return [parse(line) for line in text.splitlines() if line.startswith("::")]


def test_a_finding_is_an_error_annotation_on_its_line():
    out = render_github(cpu_result())
    first = out.splitlines()[0]
    assert first.startswith(f"::error file={ITEM_SYNC},line=14,title=CG101 sync::host reads a GPU value")
    cmd, props, msg = parse(first)
    assert props == {"file": ITEM_SYNC, "line": "14", "title": "CG101 sync"}
    assert msg.startswith("host reads a GPU value (.item(), bool(tensor), print(tensor), if tensor:)\nFix: ")


def test_every_finding_script_error_and_skipped_rule_is_annotated():
    out = render_github(cpu_result())
    found = annotations(out)
    assert [(c, p.get("title")) for c, p, _ in found[:3]] == [
        ("error", "CG101 sync"), ("error", "CG103 sync"), ("error", "CG102 sync")]
    cmd, props, msg = found[3]
    assert (cmd, props["file"]) == ("error", BROKEN) and "apex" in msg and "line" not in props
    cmd, props, msg = found[4]
    assert cmd == "notice" and ", ".join(sorted(GPU_ONLY)) in msg and "no CUDA device" in msg
    assert len(found) == 5
    assert out.splitlines()[-1].startswith("cgtool lint: 4 scripts checked on cpu: 3 errors")
    assert out.endswith("\n")


def test_severity_picks_the_command():
    found = annotations(render_github(cuda_result()))
    assert [(c, p["title"]) for c, p, _ in found] == [("error", "CG201 uncaptured-work"), ("warning", "CG403 warmup")]
    info = LintResult([ScriptResult(SIDE_STREAM, findings=[finding("CG502", file=SIDE_STREAM, severity="info")])])
    assert annotations(render_github(info))[0][0] == "notice"


def test_a_finding_without_line_or_file_uses_the_script():
    result = LintResult([ScriptResult(SIDE_STREAM, findings=[finding("CG502")])])
    cmd, props, _ = annotations(render_github(result))[0]
    assert props == {"file": SIDE_STREAM, "title": "CG502 empty-graph"}


def test_message_escaping_of_percent_and_newlines():
    f = finding("CG101", "100% of steps read loss.item()\r\nonce per iteration", file=ITEM_SYNC, line=3, hint="")
    line = render_github(LintResult([ScriptResult(ITEM_SYNC, findings=[f])])).splitlines()[0]
    assert line.endswith("::100%25 of steps read loss.item()%0D%0Aonce per iteration%0AFix: " + f.hint.replace(
        "%", "%25")) or line.endswith("::100%25 of steps read loss.item()%0D%0Aonce per iteration")
    assert "\r" not in line
    assert parse(line)[2].startswith("100% of steps read loss.item()\r\nonce per iteration")


def test_property_escaping_of_comma_and_colon():
    odd = "C:/work/odd, name/step%1.py"
    f = finding("CG104", "sync: here, there", file=odd, line=7)
    line = render_github(LintResult([ScriptResult(odd, findings=[f])])).splitlines()[0]
    assert "file=C%3A/work/odd%2C name/step%251.py,line=7," in line
    cmd, props, msg = parse(line)
    assert props["file"] == odd
    assert msg.startswith("sync: here, there")  # message keeps ':' and ','


@pytest.mark.parametrize("raw, data, prop", [
    ("a%b", "a%25b", "a%25b"),
    ("a\nb\rc", "a%0Ab%0Dc", "a%0Ab%0Dc"),
    ("x:y,z", "x:y,z", "x%3Ay%2Cz"),
    ("%0A", "%250A", "%250A"),
])
def test_escape_functions(raw, data, prop):
    assert escape_data(raw) == data
    assert escape_property(raw) == prop


def test_workflow_command_leaves_out_missing_properties():
    assert workflow_command("warning", "m", file="a.py", line=None, title="t") == "::warning file=a.py,title=t::m"
    assert workflow_command("notice", "m") == "::notice::m"


def test_base_dir_makes_paths_relative(tmp_path):
    script = tmp_path / "samples" / "item_sync.py"
    result = LintResult([ScriptResult(str(script), findings=[finding("CG101", file=str(script), line=2)])])
    cmd, props, _ = annotations(render_github(result, base_dir=tmp_path))[0]
    assert props["file"] == "samples/item_sync.py"


def test_control_characters_never_reach_the_log_raw():
    """A message, path or error holding ESC (a screen clear), BEL, NUL, C1 or DEL was written raw into the workflow
    command; they are written visibly (\\x1b), as the text, JSON and JUnit formats write them; tab stays."""
    odd = "dir\x1b[2J/step\x07.py"
    f = finding("CG101", "reads \x1b]0;title\x07 the\x00 value\x9b\x7f\tnow", file=odd, line=3)
    result = LintResult([ScriptResult(odd, findings=[f]),
                         ScriptResult("b.py", status="error", errors=["load failed: \x1b[31mred\x1b[0m"])])
    out = render_github(result)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), repr(out)
    (cmd, props, msg), (_, _, err) = annotations(out)[:2]
    assert props["file"] == "dir\\x1b[2J/step\\x07.py"
    assert msg.startswith("reads \\x1b]0;title\\x07 the\\x00 value\\x9b\\x7f\tnow")
    assert err == "load failed: \\x1b[31mred\\x1b[0m"
    assert escape_data("a\x1bb\r\nc%") == "a\\x1bb%0D%0Ac%25"
