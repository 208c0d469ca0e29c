"""Console rendering of a capture-size plan: the recommended set against vLLM's defaults (formatting only)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from cgtool.bench.size_plan import CostModel, Plan
from cgtool.render.units import fmt_bytes, fmt_us


def fmt_sizes(sizes: Sequence[int], limit: int = 12) -> str:
    """`1, 2, 4, … 256 (35 sizes)` when long."""
    if len(sizes) <= limit:
        return ", ".join(map(str, sizes)) or "none"
    head = ", ".join(map(str, sizes[: limit - 2]))
    return f"{head}, … {sizes[-1]} ({len(sizes)} sizes)"


def plan_table(plans: Sequence[tuple[str, Plan]], budget_bytes: float | None) -> Table:
    budget = f", budget {fmt_bytes(int(budget_bytes))}" if budget_bytes is not None else ""
    table = Table(title=f"capture sizes for the expected batches{budget}", title_justify="left")
    for col in ("set", "sizes", "memory", "capture", "mean step", "speedup"):
        table.add_column(col, justify="left" if col in ("set", "sizes") else "right")
    for label, plan in plans:
        table.add_row(label, fmt_sizes(plan.sizes), fmt_bytes(int(plan.memory_bytes)), f"{plan.capture_ms:.0f} ms",
                      fmt_us(plan.mean_us), f"{plan.speedup:.2f}×")
    return table


def plan_lines(plans: Sequence[tuple[str, Plan]], model: CostModel | None = None) -> list[str]:
    """Sentences under the table: what the recommendation saves against vLLM's list, any extrapolation, and how
    the memory was priced (`model`: the sweep's cost model)."""
    lines = []
    named = dict(plans)
    rec, vllm = named.get("recommended"), named.get("vLLM default")
    if rec is not None and vllm is not None:
        lines.append(f"recommended: {len(rec.sizes)} sizes, {fmt_bytes(int(rec.memory_bytes))} and "
                     f"{rec.capture_ms:.0f} ms of capture for {rec.speedup:.2f}× on average; vLLM's default list for "
                     f"this range: {len(vllm.sizes)} sizes, {fmt_bytes(int(vllm.memory_bytes))}, {vllm.capture_ms:.0f} ms, "
                     f"{vllm.speedup:.2f}×")
    if any(p.extrapolated for _, p in plans):
        lines.append("some sizes or batches lie outside the measured sizes: their figures are extrapolated "
                     "(measure a wider --sizes range to check them)")
    lines.append("batches are padded up to the next captured size; batches above the largest run eager")
    if model is not None and model.pool is not None:
        loose = sorted({s for _, p in plans for s in p.sizes if not model.pool.exact([s])})
        lines.append("memory: the caching allocator replayed over the sweep's own capture allocations, every set "
                     "captured largest first into one pool on one stream"
                     + (f"; sizes {fmt_sizes(loose)} took the allocations of the next measured size up, or of the "
                        "largest (the measured sizes around them allocated differently), so their figure is likely "
                        "high" if loose else ""))
    elif model is not None:
        lines.append(f"memory: the largest graph's pool plus {model.shared_extra:.0%} of each smaller one's (the "
                     "sweep recorded no capture allocations)")
    return lines
