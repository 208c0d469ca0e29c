"""Is a script written for ranks? Read from its source (no import, no torch): `setup`/`inputs` take `rank` or
`world_size`, or the script uses `torch.distributed` or DistributedDataParallel. A plain run of such a script
is a world of one rank (docs/distributed.md, "A plain run: a world of one")."""

from __future__ import annotations

import ast

from cgtool.errors import CgtoolError
from cgtool.files.inputs import SCRIPT, read_input

RANK_PARAMS = ("rank", "world_size")
CONTRACT_FUNCTIONS = ("setup", "inputs")


def written_for_ranks(path: str) -> bool:
    """True when the script's setup/inputs name `rank`/`world_size`, or it imports torch.distributed or
    uses DistributedDataParallel. An unreadable or invalid file is False (the run reports that itself)."""
    try:
        tree = ast.parse(read_input(path, SCRIPT), path)
    except (CgtoolError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(_is_rank_sign(node) for node in ast.walk(tree))


def _is_rank_sign(node: ast.AST) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in CONTRACT_FUNCTIONS:
        a = node.args
        names = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        return any(p in names for p in RANK_PARAMS)
    if isinstance(node, ast.Import):
        return any(alias.name == "torch.distributed" or alias.name.startswith("torch.distributed.")
                   for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if module == "torch.distributed" or module.startswith("torch.distributed."):
            return True
        return module == "torch" and any(alias.name == "distributed" for alias in node.names) or any(
            alias.name == "DistributedDataParallel" for alias in node.names)
    if isinstance(node, ast.Attribute):  # torch.distributed.all_reduce(...) without an import of its own
        return node.attr in ("distributed", "DistributedDataParallel") and _dotted(node.value) in ("torch", "torch.nn.parallel")
    return False


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""
