"""`cgtool dot` end to end in a subprocess: summary, --json, -o, --diff, --fail-on-growth, errors, no torch."""

import json
import os
import shutil
import subprocess
import sys

import pytest

DATA = os.path.join(os.path.dirname(__file__), "data")
MLP = os.path.join(DATA, "mlp20_inference.dot")
MULTI = os.path.join(DATA, "multistream_memcpy.dot")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot program")


def test_summary_tables(run_cli):
    r = run_cli("dot", MLP)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "mlp20_inference.dot: 40 nodes, 39 edges (read as driver DOT)" in out
    assert "depth 40 (longest dependency chain), width 1 (most nodes side by side), 1 root, 1 leaf" in out
    assert "gemmSN_TN_kernel<cublasGemvTensorStridedBatched>" in out and "<<<32,128,0>>>" in out
    assert "×20" in out and "block of 2 kernels" in out


def test_summary_of_copies(run_cli):
    r = run_cli("dot", MULTI)
    assert r.returncode == 0, r.stderr
    assert "Memory copies and sets" in r.stdout and "HtoD" in r.stdout and "4.0 KiB" in r.stdout


def test_json_summary(run_cli):
    r = run_cli("dot", MULTI, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert (s["nodes"], s["edges"], s["depth"], s["width"], s["roots"], s["leaves"]) == (6, 5, 5, 2, 2, 1)
    assert {k["name"]: k["count"] for k in s["kernels"]} == {
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_stag…": 2,
        "vectorized_elementwise_kernel<CUDAFunctor_add>": 2, "vectorized_elementwise_kernel<FillFunctor>": 1}


@needs_dot
def test_render_png_and_read_cgtool_dot_back(run_cli, tmp_path):
    r = run_cli("dot", MLP, "-o", tmp_path / "g.png")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")
    assert "wrote" in r.stdout
    r = run_cli("dot", MLP, "-o", tmp_path / "g.dot")
    assert r.returncode == 0, r.stderr
    before = json.loads(run_cli("dot", MLP, "--json").stdout)
    after = json.loads(run_cli("dot", tmp_path / "g.dot", "--json").stdout)
    assert after.pop("source") == "cgtool-dot" and before.pop("source") == "driver-dot"
    assert after == before


def test_max_nodes_note_and_no_fold(run_cli, tmp_path):
    r = run_cli("dot", MLP, "--no-fold", "--max-nodes", "10", "-o", tmp_path / "g.dot")
    assert r.returncode == 0, r.stderr
    assert "30 nodes not drawn (raise --max-nodes)" in r.stdout
    assert (tmp_path / "g.dot").read_text().count("cg_kind=kernel") == 10


def test_diff_and_fail_on_growth(run_cli):
    r = run_cli("dot", MULTI, "--diff", MLP)
    assert r.returncode == 0, r.stderr
    assert "+34 nodes, +35 kernels (+566.7% nodes)" in r.stdout
    r = run_cli("dot", MULTI, "--diff", MLP, "--fail-on-growth", "5")
    assert r.returncode == 1
    assert "the graph grew by 566.7% (6 → 40 nodes, +35 kernels), more than --fail-on-growth 5%" in r.stderr
    r = run_cli("dot", MLP, "--diff", MULTI, "--fail-on-growth", "0")  # shrank: passes
    assert r.returncode == 0, r.stderr
    r = run_cli("dot", MLP, "--diff", MLP, "--fail-on-growth", "0", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["growth_pct"] == 0.0


@pytest.mark.parametrize("name, words", [
    ("truncated.dot", "truncated.dot:76: a quoted string is never closed (is the file truncated?)"),
    ("garbage.dot", "garbage.dot:1: unexpected character"),
    ("empty.dot", "empty.dot is empty"),
    ("missing.dot", "No such file"),
])
def test_bad_inputs_exit_2_with_a_clear_message(run_cli, name, words):
    r = run_cli("dot", os.path.join(DATA, name))
    assert r.returncode == 2
    assert words in r.stderr and "Traceback" not in r.stderr


def test_file_cut_after_a_node_exits_2(run_cli, tmp_path):
    with open(MLP) as fh:
        text = fh.read()
    cut = text[: text.index('"graph_1_node_5"')]  # whole nodes, but the braces never close
    (tmp_path / "cut.dot").write_text(cut)
    r = run_cli("dot", tmp_path / "cut.dot")
    assert r.returncode == 2 and "expected '}' to close subgraph cluster_1" in r.stderr and "truncated" in r.stderr


def test_usage_errors(run_cli, tmp_path):
    r = run_cli("dot", MLP, "--fail-on-growth", "5")
    assert r.returncode == 2 and "--fail-on-growth needs --diff" in r.stderr
    r = run_cli("dot", MLP, "-o", tmp_path / "g.jpeg")
    assert r.returncode == 2 and ".svg, .png, .pdf or .dot" in r.stderr


def test_missing_graphviz_exits_3(run_cli, tmp_path):
    r = run_cli("dot", MLP, "-o", tmp_path / "g.svg", env={"PATH": ""})
    assert r.returncode == 3 and "apt-get install graphviz" in r.stderr


def test_help_lists_the_options(run_cli):
    r = run_cli("dot", "--help")
    assert r.returncode == 0
    for option in ("--output", "--json", "--no-fold", "--max-nodes", "--diff", "--fail-on-growth"):
        assert option in r.stdout


def test_dot_command_never_imports_torch():
    code = (
        "import sys\n"
        "from cgtool.cli import main\n"
        f"for args in (['dot', {MLP!r}], ['dot', {MULTI!r}, '--json'], ['dot', {MLP!r}, '--diff', {MULTI!r}]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, exc.code\n"
        "assert 'torch' not in sys.modules, 'cgtool dot imported torch'\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")
