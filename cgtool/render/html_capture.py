"""One capture report as HTML: the verdict, the findings and errors, the graph, the line profile, the replay
check, memory, torch.compile and partial capture, what was not checked, and the source listing they link to."""

from __future__ import annotations

from collections.abc import Mapping

from cgtool.model.exit_codes import replay_failed
from cgtool.model.report import CAPTURED, COMPILED, CPU_ONLY, CPU_SKIPPED, Report
from cgtool.render.capture import evidence_line, verdict_line
from cgtool.render.environment import describe
from cgtool.render.html_charts import hbars
from cgtool.render.html_findings import (
    errors_html,
    findings_html,
    not_checked_html,
    severity_counts,
)
from cgtool.render.html_page import (
    cards,
    esc,
    page,
    section,
    table,
    top_header,
    verdict,
)
from cgtool.render.html_source import SourceLines
from cgtool.render.units import fmt_bytes, fmt_us


def verdict_kind(report: Report) -> str:
    if report.status == CPU_ONLY:
        return "bad" if any(f.severity == "error" for f in report.findings) else "cpu"
    bad = (report.errors or any(f.severity == "error" for f in report.findings)
           or replay_failed(report.replay))
    return "ok" if report.status in (CAPTURED, COMPILED) and not bad else "bad"


def _cards(report: Report) -> str:
    items = [(severity_counts(report.findings), "findings")]
    if report.graph is not None:
        items.append((f"{len(report.graph.nodes):,}", f"graph nodes ({len(report.graph.kernels):,} kernels)"))
    t = report.timings
    if t is not None and t.replay_us:
        items += [(f"{t.speedup:.1f}×", f"replay over eager ({fmt_us(t.eager_us)} → {fmt_us(t.replay_us)})")]
    if report.replay is not None:
        items.append((report.replay.status, "replay versus eager"))
    if report.memory is not None:
        items.append((fmt_bytes(report.memory.pool_reserved), "graph pool"))
    return cards(items)


def _replay_html(report: Report) -> str:
    r = report.replay
    assert r is not None
    head = f"<p><b>{esc(r.status)}</b> on {esc(r.inputs)}" + (f": {esc(r.note)}" if r.note else "") + "</p>"
    rows = [[f"<code>{esc(t.name)}</code>", esc(list(t.shape)), esc(t.dtype), f"{t.max_abs:.3g}", f"{t.max_rel:.3g}",
             f"{t.noise_abs:.3g}", "✔" if t.ok else '<b style="color:#c92a2a">✘ differs</b>'] for t in r.tensors[:200]]
    return head + table(["tensor", "shape", "dtype", "max abs", "max rel", "eager vs eager", "ok"], rows, numeric=(3, 4, 5))


def _memory_html(report: Report) -> str:
    m = report.memory
    assert m is not None
    rows = [("graph pool reserved", m.pool_reserved), ("of it, live tensors", m.pool_allocated),
            ("static inputs", m.static_input_bytes), ("static output", m.static_output_bytes)]
    if m.capture_peak_bytes is not None:
        rows.append(("capture peak", m.capture_peak_bytes))
    return hbars([(label, float(v), fmt_bytes(v)) for label, v in rows], "GPU memory the graph holds")


def report_body_html(report: Report, prefix: str = "", sources: Mapping[str, str] | None = None) -> str:
    """The report's sections (no page around them): a rank's tab holds one. `prefix` keeps its anchors apart."""
    src = SourceLines(prefix=prefix, full=dict(sources or {}))
    src.include(report.script)
    for f in report.findings:
        src.mark(f.file, f.line, f.rule, f.severity)
        if f.source:
            src.add(f.file, f.line, f.source)
    for e in report.errors:
        for fr in e.frames:
            src.add(fr.file, fr.line, fr.source)
        if e.user_frame is not None:
            src.mark(e.user_frame.file, e.user_frame.line, e.phase, "error")
    parts = [verdict(verdict_line(report), verdict_kind(report)), _cards(report)]
    if report.errors:
        parts.append(section("Errors", errors_html(report.errors, src), prefix + "errors", str(len(report.errors))))
    judged = evidence_line(report)
    body = findings_html(report.findings, src, "No finding: nothing in the step stops capture.")
    if judged:
        body = f'<p class="muted">{esc(judged)}</p>' + body
    parts.append(section("Findings", body, prefix + "findings", severity_counts(report.findings)))
    if report.graph is not None:
        from cgtool.render.html_graph import graph_html

        parts.append(section("Captured graph", graph_html(report.graph, report.node_lines, src, prefix), prefix + "graph"))
    if report.node_lines is not None and report.graph is not None:
        from cgtool.render.html_profile import profile_html

        parts.append(section("Line profile: eager versus replay", profile_html(report.node_lines, report.graph, src),
                             prefix + "profile"))
    if report.replay is not None:
        parts.append(section("Replay versus eager", _replay_html(report), prefix + "replay"))
    if report.timings is not None:
        t = report.timings
        parts.append(section("Timing", hbars([("eager", t.eager_us, fmt_us(t.eager_us)),
                                              ("replay", t.replay_us, fmt_us(t.replay_us))],
                                             f"per iteration, median of {t.iterations} ({t.speedup:.2f}×)"),
                             prefix + "timing"))
    if report.memory is not None:
        parts.append(section("Memory", _memory_html(report), prefix + "memory"))
    parts.extend(_partial_sections(report, src, prefix))
    rules, why = _unchecked_rules(report)
    skipped = [s.text for s in report.skipped  # a CPU run's own skip is said below, with what did run
               if not (report.status == CPU_ONLY and s.code == CPU_SKIPPED.code)]
    if report.status == CPU_ONLY:
        skipped.insert(0, "capture, graph, replay check and timing: no CUDA device (the CPU analysis ran: syncs, shapes, "
                          "control flow, streams, RNG, host inputs)")
    if skipped or rules:
        parts.append(section("Not checked", not_checked_html(skipped, rules, why), prefix + "skipped"))
    if report.script_output.strip() and report.errors:
        tail = "\n".join(report.script_output.rstrip().splitlines()[-30:])
        parts.append(section("Last output of the script", f"<pre>{esc(tail)}</pre>", prefix + "output", open_=False))
    parts.append(section("Source", src.listing_html(), prefix + "source"))
    parts.append(section("Run", _run_table(report), prefix + "run", open_=False))
    return "".join(parts)


def _partial_sections(report: Report, src: SourceLines, prefix: str) -> list[str]:
    from cgtool.render.html_compiled import compiled_html, modules_html, piecewise_html

    out = []
    if report.compiled is not None:
        out.append(section("torch.compile", compiled_html(report.compiled, src), prefix + "compiled"))
    if report.piecewise is not None:
        out.append(section("Captured in pieces", piecewise_html(report.piecewise, src), prefix + "piecewise"))
    if report.modules is not None:
        out.append(section("Module map", modules_html(report.modules), prefix + "modules"))
    return out


def _unchecked_rules(report: Report) -> tuple[list[str], str]:
    if report.status != CPU_ONLY:
        return [], ""
    from cgtool.model.rules import GPU_ONLY_RULES

    return list(GPU_ONLY_RULES), "they need a captured graph on a CUDA device"


def _run_table(report: Report) -> str:
    rows = [["script", f"<code>{esc(report.script)}:{esc(report.entry)}</code>"], ["status", esc(report.status)],
            ["device", esc(report.device)], ["environment", esc(describe(report.environment))]]
    rows += [[esc(k), f"<code>{esc(v)}</code>"] for k, v in report.settings.items()]
    rows += [[f"{esc(k)} phase", f"{v:.0f} ms"] for k, v in report.phase_ms.items()]
    rows += [[f"wrote {esc(k)}", f"<code>{esc(v)}</code>"] for k, v in report.outputs.items()]
    if report.cgtool_version:
        rows.append(["cgtool", esc(report.cgtool_version)])
    return table(["", ""], rows)


def render_report_html(report: Report, sources: Mapping[str, str] | None = None) -> str:
    """The capture report as one self-contained HTML page. `sources`: file -> text of the script (and any file
    it names), for the full listing; without them the page lists the lines the report recorded."""
    head = top_header(f"cgtool capture · {report.script}:{report.entry}",
                      describe(report.environment) if report.environment else report.device)
    return page(f"cgtool · {report.script}", head, report_body_html(report, "", sources))
