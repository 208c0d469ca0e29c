"""Lint results shaped like real `cgtool lint samples/` runs, shared by the lint renderer tests."""

from __future__ import annotations

from cgtool.model.lint_result import ERROR, LintResult, ScriptResult
from cgtool.model.rules import GPU_ONLY_RULES, finding

GPU_ONLY = list(GPU_ONLY_RULES)
NO_CUDA = "no CUDA device: these rules need a captured graph"

ITEM_SYNC = "samples/hazards/item_sync.py"
MASK_INDEX = "samples/hazards/mask_index.py"
SIDE_STREAM = "samples/hazards/side_stream.py"
CLEAN = "samples/train_step.py"
BROKEN = "samples/hazards/needs_apex.py"


def cpu_result() -> LintResult:
    """A CPU run: two scripts with error findings, a clean one, one that fails to load."""
    return LintResult(
        scripts=[
            ScriptResult(
                path=ITEM_SYNC,
                findings=[
                    finding("CG101", file=ITEM_SYNC, line=14, source="    if loss.item() > 10.0:", function="step"),
                    finding("CG103", file=ITEM_SYNC, line=17, source="    history.append(out.detach().cpu())",
                            function="step"),
                ],
                skipped_rules=list(GPU_ONLY),
                skipped_reason=NO_CUDA,
            ),
            ScriptResult(
                path=MASK_INDEX,
                findings=[
                    finding("CG102", "boolean-mask indexing x[mask] makes the output size depend on the data",
                            file=MASK_INDEX, line=9, source="    kept = x[mask]", function="step"),
                ],
                skipped_rules=list(GPU_ONLY),
                skipped_reason=NO_CUDA,
            ),
            ScriptResult(path=CLEAN, skipped_rules=list(GPU_ONLY), skipped_reason=NO_CUDA),
            ScriptResult(path=BROKEN, status=ERROR,
                         errors=["ModuleNotFoundError: No module named 'apex' (line 3)"]),
        ],
        version="0.1.0",
        device="cpu",
    )


def cuda_result() -> LintResult:
    """A GPU run with only a warning and a GPU-only error, nothing skipped."""
    return LintResult(
        scripts=[
            ScriptResult(
                path=SIDE_STREAM,
                device="cuda",
                findings=[
                    finding("CG201", file=SIDE_STREAM, line=21, source="        y = layer(x)", function="step"),
                    finding("CG403", file=SIDE_STREAM, line=8, source="torch.backends.cudnn.benchmark = True"),
                ],
            ),
            ScriptResult(path=CLEAN, device="cuda"),
        ],
        version="0.1.0",
        device="cuda",
    )


def warnings_only_result() -> LintResult:
    return LintResult(
        scripts=[ScriptResult(path=SIDE_STREAM, device="cuda", findings=[
            finding("CG403", file=SIDE_STREAM, line=8, source="torch.backends.cudnn.benchmark = True"),
        ])],
        version="0.1.0",
        device="cuda",
    )
