"""The layout rule (docs/architecture.md): each subpackage is one stage and imports only go down the
stages, checked with import-linter's contracts in pyproject.toml; no import cycles; light start-up paths."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("importlinter")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """Run import-linter on the cgtool package found under `root`, with the repo's contracts."""
    env = dict(os.environ, PYTHONPATH=str(root))
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.mark.parametrize("module, upward", [
    ("cgtool/model/finding.py", "from cgtool.commands import common"),
    ("cgtool/render/text.py", "from cgtool.worker import client"),
    ("cgtool/graph/summary.py", "import click"),
    ("cgtool/checks/sync.py", "import torch"),
])
def test_an_upward_or_forbidden_import_breaks_the_contract(tmp_path, module, upward):
    shutil.copytree(ROOT / "cgtool", tmp_path / "cgtool", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{upward}  # planted by the test\n")
    r = lint_imports(tmp_path)
    assert r.returncode != 0 and "BROKEN" in r.stdout, r.stdout + r.stderr


def _imports(path: Path, package: str) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith(package)}


def test_no_import_cycles_even_through_function_level_imports():
    mods = {}
    for path in (ROOT / "cgtool").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    graph = {m: {i for i in _imports(p, "cgtool") if i in mods and i != m} for m, p in mods.items()}
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for m in sorted(graph):
        if m not in index:
            visit(m)
    assert cycles == []


def test_no_private_name_is_imported_across_modules():
    offenders = []
    for path in (ROOT / "cgtool").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cgtool"):
                offenders += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert offenders == []


def test_no_module_at_the_package_root_but_the_entry_points():
    root_modules = sorted(p.name for p in (ROOT / "cgtool").glob("*.py"))
    assert root_modules == ["__init__.py", "__main__.py", "cli.py", "errors.py"]


@pytest.mark.parametrize("argv", [["--help"], ["dot", "--help"], ["dot", "tests/data/mlp20_inference.dot"]])
def test_help_and_dot_import_no_torch(argv):
    code = ("import sys; from cgtool.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'cuda')))\n"
            "print('IMPORTED', bad)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "IMPORTED []" in r.stdout, r.stdout + r.stderr
