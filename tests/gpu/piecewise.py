"""Judging a partial-capture report (docs/partial.md) for the GPU tests: the pieced step and the module map."""

from __future__ import annotations


def judge_pieces(d: dict | None, verdict: str = "") -> tuple[bool | None, str]:
    """(ok, detail) of a report's pieced step: ok when pieces were measured with replay matching eager, or
    torch refused the step in pieces and cgtool says so clearly. None (not judged) for a pieced step whose
    replay differs when the verdict calls it unsafe (the hazard shows in the pieces too: custom_generator.py's
    generator is not advanced by graph replay)."""
    p = (d or {}).get("piecewise") or {}
    rp, t = p.get("replay") or {}, p.get("timings") or {}
    if p.get("status") == "not-possible":
        note = p.get("note") or ""
        return note.startswith("piecewise not possible:"), note[:300]
    if p.get("status") != "measured":
        err = (p.get("error") or {}).get("message") or (d or {}).get("errors")
        return False, f"status {p.get('status')}; {str(err)[:300]}; {p.get('note', '')[:200]}"
    share = p.get("kernel_share")
    splits = ", ".join(f"{(s.get('frame') or {}).get('line')}: {s['reason'][:50]}" for s in p.get("splits", []))
    detail = (f"{len(p['pieces'])} graph(s)/step, {share if share is None else format(share, '.0%')} of kernels in "
              f"graphs ({p['kernels_in_graphs']} in, {p['kernels_outside']} out); replay {rp.get('status')} (max abs "
              f"{rp.get('max_abs', 0):.2g}); speedup vs eager {t.get('speedup', 0):.2f}x (eager "
              f"{t.get('eager_us', 0):.0f} us, pieced {t.get('replay_us', 0):.0f} us); split at [{splits}]; "
              f"{p.get('note', '')[:240]}")
    if rp.get("status") == "mismatch" and "unsafe" in verdict:
        return None, detail + "; replay differs from eager and the verdict says unsafe"
    return bool(p.get("pieces")) and rp.get("status") == "match" and (t.get("speedup") or 0) > 0, detail


def judge_modules(m: dict) -> tuple[bool, str]:
    """(ok, detail) of a module map: measured, some module graphed, replay matching eager."""
    t, rp = m.get("timings") or {}, m.get("replay") or {}
    mods = "; ".join(f"{e['path']} {e['status']}" + (f" ({e['reason'][:70]})" if e["reason"] else "")
                     for e in m.get("modules", [])[:16])
    ok = m.get("status") == "measured" and bool(m.get("graphed")) and rp.get("status") == "match"
    return ok, (f"graphed {m.get('graphed')}; replay {rp.get('status')} (max abs {rp.get('max_abs', 0):.2g}); speedup "
                f"{t.get('speedup', 0):.2f}x (eager {t.get('eager_us', 0):.0f} us, graphed {t.get('replay_us', 0):.0f} us); "
                f"{mods}; {m.get('note', '')[:100]}")
