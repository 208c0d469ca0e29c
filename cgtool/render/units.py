"""Numbers for people: microseconds and bytes, as every renderer prints them."""

from __future__ import annotations

from cgtool.model.graph_memory import GraphMemory


def fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e4:
        return f"{us / 1e3:.1f} ms"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.0f} µs" if us >= 10 else f"{us:.1f} µs"


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def fmt_graph_memory(mem: GraphMemory) -> str:
    """`graph pool 34.0 MiB (30.0 MiB in live tensors) · static inputs 8.0 KiB, output 64.0 KiB · capture peak 33.0 MiB`."""
    text = (f"graph pool {fmt_bytes(mem.pool_reserved)} ({fmt_bytes(mem.pool_allocated)} in live tensors) · "
            f"static inputs {fmt_bytes(mem.static_input_bytes)}, output {fmt_bytes(mem.static_output_bytes)}")
    if mem.capture_peak_bytes is not None:
        text += f" · capture peak {fmt_bytes(mem.capture_peak_bytes)}"
    extra = mem.recipe_extra
    if mem.recipe_pool_reserved is not None and extra is not None:
        text += (f" · PyTorch's documented recipe (warmup on a side stream, torch.cuda.graph on its own capture "
                 f"stream) holds {fmt_bytes(mem.recipe_pool_reserved)}")
        if extra > 0:
            text += (f" (+{fmt_bytes(extra)}: cuBLAS makes a workspace for the new stream inside the pool, per pool "
                     f"and stream; warm up and capture on one stream, torch.cuda.graph(g, stream=s), or capture every "
                     f"graph on one stream into one pool)")
    return text
