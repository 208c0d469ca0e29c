"""Bad environments and inputs at the command line: a full, broken or closed stdout, deep or malformed graphs,
outputs that are devices, FIFOs or symlinks, help texts, unwrapped piped output. Never a traceback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
MLP = os.path.join(DATA, "mlp20_inference.dot")
GOOD = os.path.join(DATA, "scripts", "good_tuple.py")


def cgtool(*args, stdout=subprocess.PIPE, env=None, **kw) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    full_env.update(NO_COLOR="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "cgtool", *map(str, args)], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=full_env, timeout=300, **kw)


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.mark.parametrize("args", [["dot", MLP], ["dot", MLP, "--json"], ["--help"], ["lint", "--help"],
                                  ["capture", "--help"], ["bench", "--help"], ["dot", "--help"]])
def test_a_full_stdout_is_one_line_and_exit_3(args):
    with open("/dev/full", "w") as full:
        r = cgtool(*args, stdout=full)
    assert r.returncode == 3
    assert "No space left on device" in one_error_line(r.stderr)


def test_lint_and_capture_on_a_full_stdout(tmp_path):
    with open("/dev/full", "w") as full:
        lint = cgtool("lint", GOOD, stdout=full)
        capture = cgtool("capture", GOOD, "--json", "--out", tmp_path / "o", stdout=full)
    assert lint.returncode == 3 and "standard output" in one_error_line(lint.stderr)
    assert capture.returncode == 3 and "standard output" in capture.stderr.strip().splitlines()[-1]
    assert "Traceback" not in capture.stderr


def test_a_closed_pipe_is_one_line_and_exit_3():
    proc = subprocess.Popen([sys.executable, "-m", "cgtool", "dot", MLP, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, NO_COLOR="1"))
    proc.stdout.close()  # the reader goes away before anything is written, as `| head -0` would
    stderr = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 3
    assert "the reader closed the pipe" in one_error_line(stderr)


def test_a_closed_stdout_is_one_line_and_exit_3():
    r = cgtool("dot", MLP, stdout=None, preexec_fn=lambda: os.close(1))
    assert r.returncode == 3 and "closed" in one_error_line(r.stderr)


def test_deeply_nested_subgraphs_are_a_clean_usage_error(tmp_path):
    path = tmp_path / "deep.dot"
    path.write_text("digraph g {" + "subgraph cluster_x {" * 400 + "a -> b" + "}" * 400 + "}")
    r = cgtool("dot", path)
    assert r.returncode == 2  # never 1, which for dot means --fail-on-growth
    assert "nested more than 100 levels" in one_error_line(r.stderr)


@pytest.mark.parametrize("graph,words", [
    ({"nodes": "abc", "edges": []}, "graph.nodes is text, expected a list"),
    ({"nodes": [{"id": 0}], "edges": []}, "graph.nodes[0] has no `kind`"),
    ({"nodes": [{"id": 0, "kind": "kernel", "grid": [1, 2]}], "edges": []}, "graph.nodes[0].grid"),
    ({"nodes": [{"id": 0, "kind": "kernel"}], "edges": [[0, 5]]}, "graph.edges[0]"),
    ({"nodes": [], "edges": {}}, "graph.edges is an object, expected a list"),
])
def test_a_report_with_wrong_types_is_a_clean_message(tmp_path, graph, words):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema": 1, "status": "captured", "graph": graph}))
    r = cgtool("dot", path)
    assert r.returncode == 2
    line = one_error_line(r.stderr)
    assert line.startswith(f"error: {path}: ") and words in line


def test_an_unknown_node_kind_is_drawn_as_unknown(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema": 1, "status": "captured", "graph": {
        "nodes": [{"id": 0, "kind": "kernel", "name": "k"}, {"id": 1, "kind": "tensor_core_magic"}],
        "edges": [[0, 1]]}}))
    r = cgtool("dot", path, "-o", tmp_path / "out.dot")
    assert r.returncode == 0, r.stderr
    assert "unknown" in (tmp_path / "out.dot").read_text()
    edited = tmp_path / "edited.dot"  # cgtool's own DOT with a kind this version does not know
    edited.write_text((tmp_path / "out.dot").read_text().replace('cg_kind=kernel', 'cg_kind=future_kind'))
    r = cgtool("dot", edited, "-o", tmp_path / "again.dot")
    assert r.returncode == 0, r.stderr


def test_piped_output_is_never_wrapped(tmp_path):
    name = "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x64x8_stage3_warpsize2x2x1_tensor16x8x8_kernel_abc"
    path = tmp_path / "long.dot"
    path.write_text('digraph dot {\nsubgraph cluster_0 {\nlabel="graph_0";\n'
                    f'n1 [shape="octagon", label="1\\n{name}<<<{{8,1,6}},128,20480>>>"];\n'
                    f'n2 [shape="octagon", label="2\\n{name}<<<{{8,1,6}},128,20480>>>"];\nn1 -> n2;\n}}\n}}\n')
    r = cgtool("dot", path)  # stdout is a pipe, and COLUMNS is not set
    assert r.returncode == 0, r.stderr
    row = [line for line in r.stdout.splitlines() if "sm80_xmma_gemm" in line]
    assert len(row) == 1 and name[:55] in row[0] and "<<<{8,1,6},128,20480>>>" in row[0], r.stdout


def test_help_summaries_are_whole_at_80_columns():
    r = cgtool("--help", env={"COLUMNS": "80"})
    commands = r.stdout.split("Commands:", 1)[1].strip().splitlines()
    from cgtool.cli import COMMANDS

    assert len(commands) == len(COMMANDS) and all(not line.rstrip().endswith("...") for line in commands), r.stdout


def test_lint_help_tells_every_exit_code_and_that_it_runs_the_scripts():
    out = " ".join(cgtool("lint", "--help").stdout.split())
    for words in ("RUNS every script it checks", "3 environment problem", "130 interrupted", "0 no error-severity"):
        assert words in out, out


def test_config_errors_keep_their_subject(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool]\ncgtool = 1\n")
    (tmp_path / "s.py").write_text("def step():\n    pass\n")
    r = cgtool("lint", tmp_path / "s.py")
    assert r.returncode == 2
    assert one_error_line(r.stderr) == f"error: {tmp_path / 'pyproject.toml'}: [tool.cgtool] must be a table"


def test_config_warmup_below_2_is_rejected_by_the_config_check(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.cgtool]\nwarmup = 0\n")
    (tmp_path / "s.py").write_text("def step():\n    pass\n")
    r = cgtool("lint", tmp_path / "s.py")
    assert r.returncode == 2
    line = one_error_line(r.stderr)
    assert "[tool.cgtool] warmup must be a whole number from 2 to 1,000 iterations" in line and "got 0" in line


# Outputs that are not plain files: the destroyed /dev/null copies, FIFOs and symlinks.

@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_lint_output_to_a_device_keeps_the_device(tmp_path):
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    r = cgtool("lint", GOOD, "-o", null)
    assert r.returncode in (0, 1), r.stderr
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert not [p for p in os.listdir(tmp_path) if p != "null"]


def test_lint_output_to_a_fifo_reaches_its_reader(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()), daemon=True)
    reader.start()
    r = cgtool("lint", GOOD, "--format", "json", "-o", fifo)
    reader.join(timeout=20)
    assert r.returncode in (0, 1), r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and json.loads(got[0])["summary"]["scripts"] == 1


def test_lint_output_through_a_symlink_writes_the_target_with_the_umask(tmp_path):
    target = tmp_path / "real.txt"
    link = tmp_path / "link.txt"
    link.symlink_to(target)  # dangling: the target is made
    r = cgtool("lint", GOOD, "-o", link, preexec_fn=lambda: os.umask(0o022))
    assert r.returncode in (0, 1), r.stderr
    assert os.path.islink(link) and "1 script checked" in target.read_text()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644  # the umask's, not mkstemp's 0600
