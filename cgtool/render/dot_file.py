"""Writing DOT text as a file: rendered by Graphviz's `dot` program (SVG/PNG/PDF) or as the text itself, and the
`graphviz` package, imported on first use."""

from __future__ import annotations

import os
from typing import Any

from cgtool.errors import CgtoolError, ExitCode

IMAGE_FORMATS = ("svg", "png", "pdf", "dot")
DEFAULT_MAX_NODES = 500  # drawn nodes (after folding) before the picture is cut short (render/dot.py)


def graphviz_package() -> Any:
    """The `graphviz` package, imported on first use (about 50 ms of start-up that `cgtool dot`'s tables do not
    need); a declared dependency, but without it the CLI still starts and says what is missing."""
    try:
        import graphviz
    except ImportError:
        raise CgtoolError("cgtool needs the `graphviz` Python package for DOT output: pip install graphviz",
                          ExitCode.ENVIRONMENT) from None
    return graphviz


def render_source(source: str, fmt: str) -> bytes:
    """DOT text rendered by Graphviz's `dot` program as `fmt` (svg, png, pdf)."""
    graphviz = graphviz_package()
    try:
        return graphviz.pipe("dot", fmt, source.encode(), quiet=True)
    except graphviz.ExecutableNotFound:
        raise CgtoolError(
            "Rendering needs Graphviz's `dot` program, which is not on PATH. Install it with "
            "`apt-get install graphviz` (Debian/Ubuntu) or `brew install graphviz` (macOS), "
            "or write DOT instead with `-o graph.dot`.", ExitCode.ENVIRONMENT) from None
    except graphviz.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        raise CgtoolError(f"Graphviz `dot` failed: {detail[-1] if detail else exc}", ExitCode.ENVIRONMENT) from None


def output_format(out_path: str) -> str:
    """The format an output path asks for by its extension, or a CgtoolError(ExitCode.USAGE)."""
    fmt = os.path.splitext(out_path)[1].lstrip(".").lower()
    if fmt not in IMAGE_FORMATS:
        raise CgtoolError(f"Cannot write {out_path}: the output must end in .svg, .png, .pdf or .dot", ExitCode.USAGE)
    return fmt


def render_file(dot_source: str, out_path: str) -> None:
    """Write `dot_source` to out_path, rendered as its extension says (.svg, .png, .pdf; .dot is the text)."""
    fmt = output_format(out_path)
    from cgtool.render.files import write_output

    data = dot_source.encode() if fmt == "dot" else render_source(dot_source, fmt)
    write_output(out_path, data)
