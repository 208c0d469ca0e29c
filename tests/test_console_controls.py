"""Issue 34: every control character a user's string carries (C0 but newline and tab, DEL, C1) is shown escaped
(`\\x07`), never sent raw and never dropped: rich's Text would remove BEL, BS, VT, FF and CR without a word
(render/console.py)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from rich.table import Table
from rich.text import Text

from cgtool.render.console import SafeConsole, escape_controls

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTROLS = [chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]]


def shown(*renderables) -> str:
    out = SafeConsole(file=io.StringIO(), width=400, no_color=True)
    for r in renderables:
        out.print(r)
    return out.file.getvalue()


@pytest.mark.parametrize("char", CONTROLS, ids=[f"x{ord(c):02x}" for c in CONTROLS])
def test_each_control_character_is_escaped_in_text_markup_and_tables(char):
    name = f"kernel{char}name"
    table = Table("name")
    table.add_row(name)
    out = shown(name, Text(name), Text.assemble("x ", name), table)
    escaped = f"kernel\\x{ord(char):02x}name"
    assert out.count(escaped) == 4, out
    assert not any(c in out for c in CONTROLS)


def test_the_escape_counts_in_a_tables_width():
    table = Table("name", "n")
    table.add_row("a\x07b", "1")
    table.add_row("abcdefg", "2")
    lines = [ln for ln in shown(table).splitlines() if "│" in ln]
    assert len({ln.index("│", 1) for ln in lines}) == 1  # the columns line up


def test_newline_tab_and_a_windows_line_end():
    assert escape_controls("a\tb\nc") == "a\tb\nc"
    assert escape_controls("a\r\nb\rc") == "a\nb\\x0dc"


def test_a_bel_in_a_kernel_name_is_shown_by_dot(tmp_path):
    text = open(os.path.join(ROOT, "tests", "data", "mlp20_inference.dot")).read()
    (tmp_path / "bel.dot").write_text(text.replace("_Z16gemmSN", "B\x07b\x08v\x0bf\x0cr\rd\x7fn\x85c\x9be\x1bZ"))
    r = subprocess.run([sys.executable, "-m", "cgtool", "dot", "bel.dot"], cwd=tmp_path, capture_output=True,
                       text=True, env=dict(os.environ, NO_COLOR="1", COLUMNS="200"), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "B\\x07b\\x08v\\x0bf\\x0cr\\x0dd\\x7fn\\x85c\\x9be\\x1bZ" in r.stdout
    assert not any(c in r.stdout for c in CONTROLS)
