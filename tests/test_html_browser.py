"""The HTML report as a person sees it: headless Chromium (Debian's `chromium`) loads each page from disk, the
tests read the DOM it built (findings, graph nodes, links that land on source lines, nothing fetched) and keep a
screenshot in $CGTOOL_ARTIFACTS (else a temporary folder). Skips cleanly without chromium; .ci/run installs it.

The pages: a step captured on an H200 with node lines (tests/html_reports.py), the CPU capture of a sample with
every hazard of its step, a bench sweep with its capture-size plan, the 2-rank CPU run of a distributed sample,
and `lint --format json` over hazard samples."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from html_browser import CHROMIUM, dump_dom, page_requests, screenshot
from html_reports import ROOT, bench_with_plan, gpu_report

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: apt-get install chromium (.ci/run does)")


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> str:
    path = os.environ.get("CGTOOL_ARTIFACTS") or str(tmp_path_factory.mktemp("html-artifacts"))
    os.makedirs(path, exist_ok=True)
    return path


def cgtool(*args: str, cwd: str = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-m", "cgtool", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240, env=env, check=False)


class Dom(HTMLParser):
    """What the tests ask of a dumped DOM: ids, links, findings' rules, graph nodes, external references."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.rules: list[str] = []
        self.nodes = 0
        self.node_links: list[str] = []
        self.external: list[str] = []
        self.scripts: list[str] = []
        self._in_node = 0
        self._script = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        href = a.get("href") or a.get("xlink:href")
        if href:
            self.links.append(href)
            if tag == "a" and self._in_node:
                self.node_links.append(href)
        if a.get("class") == "node" and tag == "g":
            self.nodes += 1
        if "data-rule" in a:
            self.rules.append(a["data-rule"])
        for k in ("src", "href", "xlink:href", "action", "style"):
            v = a.get(k, "")
            if re.search(r"(https?:)?//[a-z0-9]", v, re.IGNORECASE) and not v.startswith("#"):
                self.external.append(f"{tag} {k}={v}")
        self._script = tag == "script"
        if tag == "g" and a.get("class") == "node":
            self._in_node = 1
        elif tag == "g" and self._in_node:
            self._in_node += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "g" and self._in_node:
            self._in_node -= 1
        self._script = False

    def handle_data(self, data: str) -> None:
        if self._script:
            self.scripts.append(data)


def check_page(html_path: str, png: str, artifacts: str, size: str = "1400,1000") -> Dom:
    """Load the page in Chromium: the DOM it built, no request beyond the file, a screenshot kept."""
    netlog = os.path.join(artifacts, os.path.basename(png) + ".netlog.json")
    dom = Dom(dump_dom(html_path, netlog))
    assert dom.external == [], dom.external
    assert page_requests(netlog) == []
    os.remove(netlog)
    local = [h for h in dom.links if h.startswith("#")]
    assert all(h[1:] in dom.ids for h in local), sorted({h for h in local if h[1:] not in dom.ids})[:10]
    screenshot(html_path, os.path.join(artifacts, png), size)
    return dom


@pytest.mark.parametrize("name", ["hf_gpt2_train", "hf_llama_infer"])
def test_a_step_captured_on_a_gpu_shows_its_graph_nodes_linked_to_their_lines(tmp_path, artifacts, name) -> None:
    report = gpu_report(name)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_json()))
    done = cgtool("report", str(path), "-o", str(tmp_path / "gpu.html"))
    assert done.returncode == 0, done.stderr
    dom = check_page(str(tmp_path / "gpu.html"), f"capture-gpu-{name}.png", artifacts)
    if shutil.which("dot"):
        assert dom.nodes >= 100  # drawn (folded repeats count once)
        assert len(dom.node_links) >= 100 and all(h[1:] in dom.ids for h in dom.node_links)
        assert 'class="graph-box js"' in dom.text  # the page's script ran: zoom and pan are on
    else:
        assert "no-dot" in dom.ids
    assert "profile" in dom.ids and "source" in dom.ids
    text = (tmp_path / "gpu.html").read_text()
    assert "Eager versus replay per line" in text
    lines = [report.node_lines.frames[r.frame] for r in report.node_lines.totals("line")]
    assert lines and all(f"{f.file.rsplit('/', 1)[-1]}:{f.line}" in text for f in lines)  # each line's replay time


def test_a_capture_with_every_hazard_lists_each_finding_at_its_line(tmp_path, artifacts) -> None:
    out = tmp_path / "out"
    done = cgtool("capture", "samples/hazards/multi/guard_stream_generator.py", "--out", str(out), "-q")
    assert done.returncode == 1, done.stderr
    dom = check_page(str(out / "report.html"), "capture-hazards.png", artifacts)
    with open(os.path.join(ROOT, "samples/hazards/multi/guard_stream_generator.py"), encoding="utf-8") as fh:
        expected = re.findall(r"# expect: (CG\d+)", fh.read())
    assert sorted(dom.rules) == sorted(expected) and len(expected) == 4
    assert "skipped" in dom.ids  # not checked on CPU: the GPU-only rules


def test_a_bench_sweep_shows_its_size_plan(tmp_path, artifacts) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench_with_plan()))
    done = cgtool("report", str(path), "-o", str(tmp_path / "bench.html"))
    assert done.returncode == 0, done.stderr
    check_page(str(tmp_path / "bench.html"), "bench-plan.png", artifacts, "1400,1600")
    text = (tmp_path / "bench.html").read_text()
    assert 'id="plan"' in text and "recommended" in text and "vLLM default" in text
    # two line charts (time, speedup by size), the sets' sizes on one axis, their speedup; this sweep measured no
    # pool, so no memory bars, and the page says so
    assert text.count("<svg") == 4 and "measured no graph memory" in text


def test_two_ranks_get_a_tab_each_and_the_cross_rank_findings(tmp_path, artifacts) -> None:
    out = tmp_path / "dist"
    # --warmup 2: the divergence is at collective #2 (warmup iteration 1) either way; without it DDP's 11 warmups
    done = cgtool("capture", "--nproc-per-node", "2", "--warmup", "2", "samples/distributed/hazards/rank_dependent.py",
                  "--out", str(out), "-q")
    assert done.returncode in (1, 3), done.stderr
    dom = check_page(str(out / "report.html"), "distributed-2-ranks.png", artifacts)
    assert {"rank0", "rank1", "cross", "ranks"} <= dom.ids
    assert '<a href="#rank0" class="on">' in dom.text  # the first tab is the one shown, and marked so
    merged = json.loads((out / "report.json").read_text())
    assert sorted(dom.rules) == sorted(
        [f["rule"] for f in merged["findings"]] + [f["rule"] for r in merged["ranks"] if r["report"]
                                                   for f in r["report"]["findings"]])


def test_lint_json_of_many_scripts(tmp_path, artifacts) -> None:
    scripts = ["samples/hazards/item_sync.py", "samples/hazards/python_branch.py", "samples/hazards/clean_mlp_inference.py"]
    done = cgtool("lint", "--format", "json", "--html", str(tmp_path / "lint.html"), *scripts)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    dom = check_page(str(tmp_path / "lint.html"), "lint.png", artifacts)
    assert sorted(dom.rules) == sorted(f["rule"] for s in result["scripts"] for f in s["findings"])
    (tmp_path / "lint.json").write_text(done.stdout)
    again = cgtool("report", str(tmp_path / "lint.json"), "-o", str(tmp_path / "again.html"))
    assert again.returncode == 0 and sorted(Dom((tmp_path / "again.html").read_text()).rules) == sorted(dom.rules)


def test_the_network_check_sees_a_page_that_fetches(tmp_path, artifacts) -> None:
    """The check above can fail: a page with an image from elsewhere (and no CSP) is caught by both parts."""
    page = tmp_path / "fetches.html"
    page.write_text('<html><body><img src="http://cgtool-test.invalid/x.png"></body></html>')
    netlog = str(tmp_path / "net.json")
    dom = Dom(dump_dom(str(page), netlog))
    assert dom.external and any("cgtool-test.invalid" in u for u in page_requests(netlog))
