import textwrap

import pytest

from cgtool.errors import CgtoolError, ExitCode
from cgtool.lint.config import LintConfig, find_pyproject, load_config
from cgtool.lint.filter import (
    filter_findings,
    is_suppressed,
    normalize_patterns,
    parse_suppression,
    remove_suppressed,
    rule_enabled,
    select_findings,
)
from cgtool.model.rules import finding

SCRIPT = "samples/hazards/mixed.py"
FINDINGS = [
    finding("CG101", file=SCRIPT, line=12, source="    if loss.item() > 10.0:", function="step"),
    finding("CG104", file=SCRIPT, line=15, source="    torch.cuda.synchronize()", function="step"),
    finding("CG201", file=SCRIPT, line=20, source="        y = layer(x)", function="step"),
    finding("CG302", file=SCRIPT, line=24, source="    if i % 2 == 0:", function="step"),
]


def rules(findings):
    return [f.rule for f in findings]


# --- select / ignore -------------------------------------------------------------------------------

def test_no_select_keeps_everything():
    assert rules(select_findings(FINDINGS)) == ["CG101", "CG104", "CG201", "CG302"]


def test_select_by_id_and_prefix():
    assert rules(select_findings(FINDINGS, select=["CG201"])) == ["CG201"]
    assert rules(select_findings(FINDINGS, select=["CG1"])) == ["CG101", "CG104"]
    assert rules(select_findings(FINDINGS, select=["CG1", "CG3"])) == ["CG101", "CG104", "CG302"]


def test_ignore_by_id_and_prefix_and_ignore_wins():
    assert rules(select_findings(FINDINGS, ignore=["CG104"])) == ["CG101", "CG201", "CG302"]
    assert rules(select_findings(FINDINGS, ignore=["CG1", "CG2"])) == ["CG302"]
    assert rules(select_findings(FINDINGS, select=["CG1"], ignore=["CG101"])) == ["CG104"]


def test_patterns_are_case_insensitive():
    assert rules(select_findings(FINDINGS, select=["cg10"])) == ["CG101", "CG104"]
    assert rule_enabled("CG201", ignore=["cg2"]) is False


def test_normalize_patterns_upper_cases_and_rejects_unknown():
    assert normalize_patterns([" cg1", "CG201"], "--select") == ("CG1", "CG201")
    with pytest.raises(CgtoolError) as exc:
        normalize_patterns(["CG999"], "--ignore")
    assert exc.value.exit_code == ExitCode.USAGE
    assert "--ignore" in exc.value.message and "CG999" in exc.value.message
    with pytest.raises(CgtoolError):
        normalize_patterns([""], "--select")


# --- inline suppression ----------------------------------------------------------------------------

@pytest.mark.parametrize("line, expected", [
    ("    x = y.item()  # cgtool: ignore[CG101]", ("CG101",)),
    ("    x = y.item()  # cgtool: ignore[CG201,CG302]", ("CG201", "CG302")),
    ("    x = y.item()  # cgtool: ignore[ CG201 , cg302 ]", ("CG201", "CG302")),
    ("    x = y.item()  # cgtool: ignore", ()),
    ("    x = y.item()  #cgtool:ignore[CG101]", ("CG101",)),
    ("    x = y.item()  # noqa: E501  # cgtool: ignore[CG101] host read is intended", ("CG101",)),
    ("    x = y.item()  # CGTOOL: IGNORE[cg101]", ("CG101",)),
    ("    x = y.item()", None),
    ("    x = y.item()  # cgtool: ignored on purpose", None),
    ("    x = y.item()  # cgtool: ignore[]", None),
    ('    print("# cgtool: ignore[CG101]")', None),
    ("    s = 'a # b'  # cgtool: ignore[CG104]", ("CG104",)),
    ('    s = "it\\"s # not"  # cgtool: ignore', ()),
    ('    s = """# cgtool: ignore"""', None),
])
def test_parse_suppression(line, expected):
    assert parse_suppression(line) == expected


def test_is_suppressed_reads_the_finding_line_from_the_source_lines():
    lines = ["import torch", "", "def step(x):", "    return x.item()  # cgtool: ignore[CG101]"]
    f = finding("CG101", file=SCRIPT, line=4, source="    return x.item()")
    assert is_suppressed(f, lines)
    assert not is_suppressed(finding("CG103", file=SCRIPT, line=4), lines)
    assert not is_suppressed(finding("CG101", file=SCRIPT, line=3), lines)


def test_is_suppressed_by_bare_comment_and_by_prefix():
    assert is_suppressed(finding("CG302", line=1), ["if flag:  # cgtool: ignore"])
    assert is_suppressed(finding("CG104", line=1), ["torch.cuda.synchronize()  # cgtool: ignore[CG1]"])
    assert not is_suppressed(finding("CG201", line=1), ["torch.cuda.synchronize()  # cgtool: ignore[CG1]"])


def test_is_suppressed_falls_back_to_the_findings_source():
    f = finding("CG101", file=SCRIPT, line=40, source="    v = t.item()  # cgtool: ignore[CG101]")
    assert is_suppressed(f)
    assert is_suppressed(f, ["only one line"])  # line 40 is out of range: use the source text
    assert not is_suppressed(finding("CG101", file=SCRIPT))


def test_remove_suppressed_reads_each_file_once(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch

        def step(model, x):
            loss = model(x).sum()
            if loss.item() > 1:  # cgtool: ignore[CG101]
                print("big")
            torch.cuda.synchronize()
            return loss
        """))
    path = str(script)
    found = [finding("CG101", file=path, line=5), finding("CG104", file=path, line=7),
             finding("CG101", file=path, line=5, message="second report of the same line")]
    reads = []

    def read(p):
        reads.append(p)
        return script.read_text().splitlines()

    assert rules(remove_suppressed(found, read)) == ["CG104"]
    assert reads == [path]
    assert rules(remove_suppressed(found)) == ["CG104"]  # the default reader reads the file from disk


def test_remove_suppressed_keeps_findings_of_unreadable_files(tmp_path):
    f = finding("CG101", file=str(tmp_path / "gone.py"), line=3, source="x.item()")
    assert remove_suppressed([f]) == [f]


def test_filter_findings_selects_then_removes_suppressed():
    lines = {SCRIPT: [""] * 11 + ["    if loss.item() > 10.0:  # cgtool: ignore"] + [""] * 20}
    kept = filter_findings(FINDINGS, select=["CG1", "CG3"], ignore=["CG302"], read_lines=lines.__getitem__)
    assert rules(kept) == ["CG104"]


# --- [tool.cgtool] in pyproject.toml ---------------------------------------------------------------

def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_no_pyproject_gives_defaults(tmp_path):
    assert load_config(tmp_path) == LintConfig()


def test_reads_the_nearest_pyproject_upward(tmp_path):
    pyproject = write(tmp_path / "pyproject.toml", """\
        [project]
        name = "trainer"

        [tool.cgtool]
        select = ["cg1", "CG3"]
        ignore = ["CG104"]
        format = "sarif"
        warmup = 5
        timeout = 120
        """)
    nested = tmp_path / "samples" / "hazards"
    nested.mkdir(parents=True)
    config = load_config(nested)
    assert config == LintConfig(select=("CG1", "CG3"), ignore=("CG104",), format="sarif", warmup=5,
                                timeout=120.0, path=str(pyproject.resolve()))
    script = write(nested / "item_sync.py", "def step(x):\n    return x\n")
    assert load_config(script) == config  # a file as the start: its folder


def test_a_pyproject_without_tool_cgtool_is_passed_over(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cgtool]\nignore = ["CG2"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\n')
    assert find_pyproject(tmp_path / "pkg") == (tmp_path / "pyproject.toml").resolve()
    assert load_config(tmp_path / "pkg").ignore == ("CG2",)


def test_nearest_table_wins(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cgtool]\nignore = ["CG2"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[tool.cgtool]\nformat = "junit"\n')
    config = load_config(tmp_path / "pkg")
    assert config.format == "junit" and config.ignore == ()


def test_a_pyproject_mentioning_cgtool_without_a_table_gives_defaults(tmp_path):
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\ndependencies = ["cgtool"]\n')
    assert load_config(tmp_path) == LintConfig()


@pytest.mark.parametrize("body, key", [
    ('selct = ["CG101"]', "selct"),
    ('select = "CG101"', "select"),
    ('select = ["CG101", 3]', "select"),
    ('select = ["CG9"]', "select"),
    ('ignore = ["XX1"]', "ignore"),
    ('format = "html"', "format"),
    ("warmup = -1", "warmup"),
    ("warmup = 2.5", "warmup"),
    ("warmup = true", "warmup"),
    ('warmup = "3"', "warmup"),
    ("timeout = 0", "timeout"),
    ('timeout = "60s"', "timeout"),
])
def test_bad_values_name_the_file_and_key(tmp_path, body, key):
    pyproject = write(tmp_path / "pyproject.toml", f"[tool.cgtool]\n{body}\n")
    with pytest.raises(CgtoolError) as exc:
        load_config(tmp_path)
    assert exc.value.exit_code == ExitCode.USAGE
    assert str(pyproject.resolve()) in exc.value.message
    assert key in exc.value.message


def test_tool_cgtool_must_be_a_table(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool]\ncgtool = "strict"\n')
    with pytest.raises(CgtoolError, match="must be a table"):
        load_config(tmp_path)


def test_invalid_toml_names_the_file(tmp_path):
    pyproject = write(tmp_path / "pyproject.toml", "[tool.cgtool\nselect = [\n")
    with pytest.raises(CgtoolError) as exc:
        load_config(tmp_path)
    assert exc.value.exit_code == ExitCode.USAGE
    assert str(pyproject.resolve()) in exc.value.message and "TOML" in exc.value.message


def test_scripts_only_passes_over_the_files_given_that_define_no_entry(tmp_path):
    """--scripts-only (the pre-commit hook): a module with no step() is read, not imported, and left out."""
    from cgtool.lint.run import find_scripts

    script, module = tmp_path / "train.py", tmp_path / "helpers.py"
    script.write_text("def step():\n    pass\n")
    module.write_text("raise SystemExit('imported')\n")
    assert find_scripts([str(script), str(module)], "step", scripts_only=True) == [(str(script), "step")]
    assert len(find_scripts([str(script), str(module)], "step")) == 2  # named files are scripts by default
    assert find_scripts([f"{module}:fn"], "step", scripts_only=True) == []
