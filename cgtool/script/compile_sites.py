"""Find the torch.compile calls of a script without running it: `torch.compile(model, mode=...)`,
`@torch.compile(...)`, `model.compile(...)`, `torch.compile(fn, backend="cudagraphs")`, and which of them ask
for CUDA graphs (mode "reduce-overhead" / "max-autotune", options {"triton.cudagraphs": True}, backend
"cudagraphs"). The pipeline uses it to pick the compiled-step run; lint uses it on machines without a GPU."""

from __future__ import annotations

import ast

from cgtool.model.compiled import CompileSite

CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


def compile_sites(path: str) -> list[CompileSite]:
    """Every compile call in the file, in line order; [] when the file does not parse."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        tree = ast.parse(text, filename=path)
    except (OSError, SyntaxError, ValueError):
        return []
    lines = text.splitlines()
    names = _compile_names(tree)
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_compile(node.func, names):
            sites.append(_site(path, node, node.keywords, lines))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                if not isinstance(dec, ast.Call) and _is_compile(dec, names):  # bare @torch.compile
                    sites.append(_site(path, dec, [], lines))
    return sorted(sites, key=lambda s: s.line)


def _compile_names(tree: ast.AST) -> set[str]:
    """Local names bound to torch.compile (`from torch import compile as tc`)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "torch":
            out |= {a.asname or a.name for a in node.names if a.name == "compile"}
    return out


def _is_compile(func: ast.expr, names: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in names
    if isinstance(func, ast.Attribute) and func.attr == "compile":
        base = func.value
        if isinstance(base, ast.Name) and base.id == "torch":
            return True
        # model.compile(...) (nn.Module.compile); re.compile and friends are not torch's
        return not (isinstance(base, ast.Name) and base.id in ("re", "regex", "builtins"))
    return False


def _site(path: str, node: ast.AST, keywords: list[ast.keyword], lines: list[str]) -> CompileSite:
    kw = {k.arg: k.value for k in keywords if k.arg}
    mode = _const(kw.get("mode"))
    backend = _const(kw.get("backend")) or ("inductor" if "backend" not in kw else ast.unparse(kw["backend"]))
    options = kw.get("options")
    opt_graphs = False
    if isinstance(options, ast.Dict):
        for k, v in zip(options.keys, options.values):
            if _const(k) == "triton.cudagraphs" and isinstance(v, ast.Constant) and v.value is True:
                opt_graphs = True
    cudagraphs = mode in CUDAGRAPH_MODES or backend == "cudagraphs" or opt_graphs
    computed = [k for k in ("mode", "backend") if k in kw and not isinstance(kw[k], ast.Constant)]
    if computed and not cudagraphs:  # mode=MODE: unknown until it runs; observe it (no tree → said so)
        cudagraphs, mode = True, f"{computed[0]}={ast.unparse(kw[computed[0]])} (computed)"
    if opt_graphs and not mode:
        mode = 'options={"triton.cudagraphs": True}'
    line = getattr(node, "lineno", 0)
    source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return CompileSite(path, line, mode, backend, cudagraphs, source)


def _const(node: ast.expr | None) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
