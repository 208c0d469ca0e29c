"""The values of a report's `compiled` section that the console (render/compiled.py) and the HTML report
(render/html_compiled.py) both show, as plain text: each formats and escapes them its own way."""

from __future__ import annotations

from cgtool.model.compiled import CompiledRun, CompileSite
from cgtool.render.units import fmt_us

FUNCTION_COLUMNS = ["fn", "name", "mode", "compile id", "graphs", "key", "re-records"]


def site_what(s: CompileSite) -> str:
    """`torch.compile of Net`, or the form alone when the target has no name."""
    return f"{s.form} of {s.target}" if s.target else s.form


def dynamo_graphs_text(run: CompiledRun) -> str | None:
    if run.dynamo_graphs is None:
        return None
    return f"dynamo compiled {run.dynamo_graphs} graph(s) in all (breaks and recompiles add graphs)"


def trees_text(run: CompiledRun) -> str:
    return (f"{run.graphs_recorded} graph(s) recorded by {len(run.functions)} function(s) over {run.iterations} "
            "calls")


def function_rows(run: CompiledRun) -> list[list[str]]:
    """A row of FUNCTION_COLUMNS per tree function."""
    return [[str(f.function_id), f.name, f.mode, f.compile_id, str(f.graphs), f.symint_key or "-", str(f.rerecords)]
            for f in run.functions]


def kernel_share_text(run: CompiledRun) -> str | None:
    """`12 of 14 per steady step (86%); 9 Triton kernels per step`; None when the share is not known."""
    share = run.kernel_share
    if share is None:
        return None
    total = (run.kernels_in_graphs or 0) + (run.kernels_outside or 0)
    return (f"{run.kernels_in_graphs} of {total} per steady step ({share:.0%}); {run.triton_kernels} Triton kernels "
            "per step")


def timings_text(run: CompiledRun) -> str:
    """`eager 1.2 ms · compiled 800 µs · cudagraphs 300 µs`; "" without timings."""
    return " · ".join(f"{k} {fmt_us(v)}" for k, v in run.timings_us.items())
