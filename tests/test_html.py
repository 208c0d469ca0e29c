"""The HTML report without a browser: hostile strings stay text, the page works without `dot`, what a page
holds for each kind of JSON, and `cgtool report`'s errors."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cgtool.cli import main
from cgtool.graph.model import Graph, GraphNode
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.node_profile import NodeProfile, NodeSource
from cgtool.model.report import CAPTURED, ErrorRecord, Report
from cgtool.model.report_parts import OUTPUT_FILE, Skip
from cgtool.render import html_graph
from cgtool.render.html import document_kind, render_document_html, render_report_html

EVIL = '</pre></table><script>alert("x")</script><img src=x onerror=alert(1)>&amp;"\''


class Tags(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.handlers: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers += [k for k, _ in attrs if k.startswith("on")]


def hostile_report() -> Report:
    frame = Frame(f"/tmp/{EVIL}.py", 3, EVIL, f"x = {EVIL}")
    graph = Graph(nodes=[GraphNode(0, "kernel", name=EVIL, demangled=EVIL + "()"), GraphNode(1, "kernel", name="k2")],
                  edges=[(0, 1)])
    profile = NodeProfile(frames=[frame], nodes=[NodeSource(0, "aten.mm", 0, -1, f"model.{EVIL}", "capture", 3.0),
                                                  NodeSource(1, "aten.add", 0, -1, "model", "capture", 1.0)],
                          replays=5, replay_us=4.0, kernels=2, kernels_mapped=2)
    finding = Finding("CG101", "sync", "error", EVIL, frame.file, 3, frame.source, EVIL, EVIL, library=EVIL)
    return Report(script=frame.file, entry=EVIL, status=CAPTURED, device="cuda", graph=graph, node_lines=profile,
                  findings=[finding], errors=[ErrorRecord("capture", "RuntimeError", EVIL, (frame,))],
                  skipped=[Skip(OUTPUT_FILE, EVIL)], outputs={EVIL: EVIL}, settings={EVIL: EVIL})


@pytest.mark.parametrize("with_dot", [True, False])
def test_hostile_strings_stay_text(monkeypatch, with_dot) -> None:
    if with_dot and shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    if not with_dot:
        monkeypatch.setattr(html_graph.shutil, "which", lambda name: None)
    page = render_report_html(hostile_report(), {f"/tmp/{EVIL}.py": f"a = 1\nb = 2\nx = {EVIL}\n"})
    parsed = Tags(page)
    assert parsed.tags.count("script") == 1 and "img" not in parsed.tags and parsed.handlers == []
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "Skip(" not in page  # a skipped record is said in words
    assert ("class=\"graph-box\"" in page) == with_dot
    if not with_dot:
        assert "not on PATH" in page and "<details open><summary>node table" in page


def test_the_page_forbids_every_fetch() -> None:
    page = render_report_html(Report(script="s.py", entry="step"))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "http://" not in page and "https://" not in page


def test_every_node_link_names_a_line_of_the_listing() -> None:
    page = render_report_html(hostile_report())
    ids = set(__import__("re").findall(r' id="([^"]+)"', page))
    links = __import__("re").findall(r'href="#([^"]+)"', page)
    assert links and all(link in ids for link in links)


def test_document_kinds(tmp_path) -> None:
    assert document_kind({"kind": "cgtool-bench"}) == "bench"
    assert document_kind({"kind": "distributed"}) == "distributed"
    assert document_kind({"schema": 1, "summary": {}, "scripts": []}) == "lint"
    assert document_kind(json.loads(Path("tests/data/report_cpu.json").read_text())) == "capture"
    assert document_kind([1]) is None and document_kind({"x": 1}) is None
    with pytest.raises(ValueError):
        render_document_html({"x": 1})


def test_report_command_writes_the_page_and_refuses_what_is_not_a_report(tmp_path, capsys) -> None:
    out = tmp_path / "r.html"
    with pytest.raises(SystemExit) as done:
        main(["report", "tests/data/report_cpu.json", "-o", str(out)])
    assert done.value.code == 0 and "CG101" in out.read_text()
    for bad, words in (({"x": 1}, "not a cgtool report"), ({"schema": 99, "script": "s", "entry": "e", "status": "x"},
                                                            "not a usable cgtool capture report")):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(SystemExit) as done:
            main(["report", str(path), "-o", str(tmp_path / "bad.html")])
        assert done.value.code == 2 and words in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["report", str(tmp_path / "missing.json")])
    assert done.value.code == 2 and "No such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["report", "tests/data/report_cpu.json", "-o", "tests/data/report_cpu.json"])
    assert done.value.code == 2


def test_hostile_strings_stay_text_in_lint_and_rank_pages() -> None:
    from cgtool.model.lint_result import LintResult, ScriptResult
    from cgtool.model.ranks import STOPPED, DistReport, RankResult
    from cgtool.render.html import render_distributed_html, render_lint_html

    report = hostile_report()
    lint = LintResult([ScriptResult(EVIL, EVIL, findings=report.findings, errors=[EVIL], skipped_rules=[EVIL],
                                    skipped_reason=EVIL)], version=EVIL)
    dist = DistReport(EVIL, EVIL, 2, [RankResult(0, report, summary={"status": EVIL}),
                                      RankResult(1, None, STOPPED, EVIL, EVIL, output=EVIL)],
                      findings=report.findings, graph_diffs={EVIL: {"rows": [{"group": EVIL, "name": EVIL,
                                                                              "before": 1, "after": 2, "delta": 1}]}})
    for page in (render_lint_html(lint, {EVIL: EVIL}), render_distributed_html(dist)):
        parsed = Tags(page)
        assert parsed.tags.count("script") == 1 and "img" not in parsed.tags and parsed.handlers == []


def test_memory_and_timing_are_drawn_as_bars() -> None:
    from cgtool.model.graph_memory import GraphMemory
    from cgtool.model.report import Timings

    report = Report(script="s.py", entry="step", status=CAPTURED, device="cuda",
                    memory=GraphMemory(34 * 2**20, 30 * 2**20, 8192, 65536, 33 * 2**20),
                    timings=Timings(858.0, 212.0, 200))
    page = render_report_html(report)
    assert 'id="memory"' in page and "34.0 MiB" in page and "33.0 MiB" in page
    assert 'id="timing"' in page and "858 µs" in page and "4.05×" in page


def test_bench_writes_its_page_beside_the_json(tmp_path) -> None:
    from types import SimpleNamespace

    from cgtool.bench.result import BenchReport
    from cgtool.commands.bench import finish, html_beside

    report = BenchReport.from_json(json.loads(Path("tests/data/bench_sweep.json").read_text()))
    out = tmp_path / "sweep.json"
    assert html_beside(str(out)) == str(tmp_path / "sweep.html") and html_beside(None) is None
    assert html_beside(str(tmp_path / "x.html")) is None  # never the JSON itself
    with pytest.raises(SystemExit) as done:
        finish(report, SimpleNamespace(failure=None), None, None, None, str(out), False, True,
               html_path=html_beside(str(out)))
    assert done.value.code == 0 and json.loads(out.read_text())["kind"] == "cgtool-bench"
    assert "replay is 6.4–12.5× faster" in (tmp_path / "sweep.html").read_text()


def test_bench_html_with_partial_capture_is_a_usage_error(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["bench", "samples/mlp_inference.py", "--piecewise", "--html", str(tmp_path / "b.html")])
    assert done.value.code == 2 and "--html" in capsys.readouterr().err


def test_a_cpu_run_says_what_did_not_run_in_words() -> None:
    report = Report.from_json(json.loads(Path("tests/data/report_cpu.json").read_text()))  # an older report: text
    report.skipped.append(Skip(OUTPUT_FILE, "graph.svg: the disk is full"))
    page = render_report_html(report)
    items = [x for x in page.split("<li>")[1:]]
    assert any(x.startswith("graph.svg: the disk is full</li>") for x in items) and "Skip(" not in page
    assert not any(x.startswith("capture, graph, replay check and timing need a CUDA device") for x in items)


def test_the_styles_stay_inside_the_report() -> None:
    """A page shown inside another (a notebook's output) must not restyle its host: every rule is under .cgtool."""
    import re

    from cgtool.render.html_page import CSS

    selectors = [sel.strip() for rule in re.findall(r"([^{}]+)\{[^{}]*\}", CSS) for sel in rule.split(",")]
    assert selectors and all(sel.startswith(".cgtool") for sel in selectors), [s for s in selectors if not s.startswith(".cgtool")]
