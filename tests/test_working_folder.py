"""Issue 34: the user's working folder never shadows cgtool, torch or click in a process cgtool starts (the
worker, the ranks' launcher, each rank: cgtool/worker/start.py), while the script imports what `python
script.py` would (its own folder first). cgtool runs here as its console script does: no working folder on
the path of the cgtool process itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cgtool.worker.start import BOOT, PACKAGE_DIR, python_args, python_command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the `cgtool` console script: sys.path[0] is its bin folder, never the working folder
CONSOLE_SCRIPT = [sys.executable, "-c", "import sys; del sys.path[0]; from cgtool.cli import main; main()"]

STEP = """import torch
import helper

def setup(device):
    return {"w": torch.ones(4, 4, device=device)}

def step(w):
    return helper.twice(w) @ w
"""


def shadowing_folder(folder) -> None:
    """A working folder whose `cgtool/`, `torch.py`, `click/` and `rich.py` would break anything importing them."""
    (folder / "cgtool").mkdir()
    (folder / "cgtool" / "__init__.py").write_text("")  # no __version__: what the clone's parent folder offers
    (folder / "torch.py").write_text("raise ImportError('the working folder torch.py was imported')\n")
    (folder / "click").mkdir()
    (folder / "click" / "__init__.py").write_text("raise ImportError('the working folder click was imported')\n")
    (folder / "rich.py").write_text("raise ImportError('the working folder rich.py was imported')\n")
    (folder / "helper.py").write_text("raise ImportError('the working folder helper.py was imported')\n")


# cgtool installed as `pip install -e` installs it: found by a finder after the path's own (setuptools' editable
# finder), never through a folder on sys.path, so a `cgtool/` folder on the path wins over it
EDITABLE = f"""import importlib.abc, importlib.machinery, importlib.util, sys

class CgtoolFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "cgtool":
            return importlib.util.spec_from_file_location(
                name, {os.path.join(ROOT, "cgtool", "__init__.py")!r}, submodule_search_locations=[{os.path.join(ROOT, "cgtool")!r}])

sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder) + 1, CgtoolFinder())
"""


def cli(folder, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    site = folder.parent / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(EDITABLE)
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200", PYTHONPATH=str(site))
    return subprocess.run([*CONSOLE_SCRIPT, *args], cwd=folder, capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture
def shadowed(tmp_path):
    """(working folder full of shadows, a script in another folder with its own helper module)."""
    work, scripts = tmp_path / "work", tmp_path / "scripts"
    work.mkdir()
    scripts.mkdir()
    shadowing_folder(work)
    (scripts / "helper.py").write_text("def twice(x):\n    return 2 * x\n")
    (scripts / "s.py").write_text(STEP)
    return work, str(scripts / "s.py")


def test_capture_from_a_folder_that_shadows_cgtool_torch_and_click(shadowed):
    work, script = shadowed
    r = cli(work, "capture", script, "--out", "o")
    assert r.returncode == 3, r.stdout + r.stderr  # no CUDA device: the CPU analysis ran (README's exit codes)
    assert "no hazard found" in r.stdout and "worker failed" not in r.stdout
    assert json.loads((work / "o" / "report.json").read_text())["status"] == "cpu-only"


def test_lint_from_a_folder_that_shadows_cgtool_torch_and_click(shadowed):
    work, script = shadowed
    r = cli(work, "lint", script, "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(r.stdout)
    assert result["summary"]["failed_scripts"] == 0 and result["scripts"][0]["errors"] == []


def test_the_clones_parent_folder(tmp_path):
    """`cd ..; cgtool capture cgtool/samples/mlp_inference.py`: the folder above a clone named cgtool."""
    clone = tmp_path / "cgtool"
    clone.mkdir()
    (clone / "samples").mkdir()
    (clone / "samples" / "mlp_inference.py").write_text(open(os.path.join(ROOT, "samples", "mlp_inference.py")).read())
    (clone / "cgtool").mkdir()  # the clone's package folder: `import cgtool` from tmp_path finds a namespace package
    r = cli(tmp_path, "capture", "cgtool/samples/mlp_inference.py", "-q")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "__version__" not in r.stdout + r.stderr and "worker failed" not in r.stdout


def test_the_script_imports_what_python_script_py_would(tmp_path):
    """Its own folder first (its helper, not the working folder's); a module only the working folder holds is not
    importable, as with `python scripts/s.py` from there: the script's error, at its line."""
    work, scripts = tmp_path / "work", tmp_path / "scripts"
    work.mkdir()
    scripts.mkdir()
    (work / "only_here.py").write_text("VALUE = 1\n")
    (scripts / "s.py").write_text("import torch\nimport only_here\n\ndef step():\n    return torch.ones(2)\n")
    r = cli(work, "capture", str(scripts / "s.py"), "--out", "o")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "s.py:2" in r.stdout and "No module named 'only_here'" in r.stdout
    plain = subprocess.run([sys.executable, str(scripts / "s.py")], cwd=work, capture_output=True, text=True)
    assert "No module named 'only_here'" in plain.stderr  # what Python itself does


def test_ranks_start_off_the_working_folder(shadowed):
    """The launcher (torch.distributed.run) and each rank: a world of two on CPU, from the shadowing folder."""
    work, script = shadowed
    r = cli(work, "lint", script, "--nproc-per-node", "2", "--cpu", "--format", "json", timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["summary"]["failed_scripts"] == 0


def test_bench_starts_its_worker_off_the_working_folder(shadowed):
    """bench's worker loads the script and says it needs a GPU (exit 3), not a crash (exit 4)."""
    work, script = shadowed
    r = cli(work, "bench", script, "--iters", "2")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "needs a CUDA device" in r.stdout + r.stderr and "crash" not in r.stdout


def test_the_boot_command_runs_the_parents_cgtool(tmp_path):
    """python_command: the interpreter, then -c BOOT PKG MODULE ARGS; the working folder never on the path."""
    shadowing_folder(tmp_path)
    assert python_command("cgtool", "--version") == [sys.executable, "-c", BOOT, PACKAGE_DIR, "cgtool", "--version"]
    assert python_args("m", "a")[2:] == [PACKAGE_DIR, "m", "a"]
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "__init__.py"))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the package is found from PKG alone, not from the path
    r = subprocess.run(python_command("cgtool", "--version"), cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and "cgtool" in r.stdout, r.stderr
