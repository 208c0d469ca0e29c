"""The rule catalogue: stable ids, category, default severity, one-line title and the fix, and what each rule
(and each kind of it) predicts for the real run: every verdict reads these fields, never a message.

Checks create findings through `finding(rule_id, ...)` so that text and severity stay consistent.
docs/rules.md documents each rule with a bad and a good example.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgtool.model.finding import Finding


CAPTURE_FAILS = "capture-fails"
REPLAY_DIFFERS = "replay-differs"  # the capture may succeed, but replay does not compute what eager does


@dataclass(frozen=True)
class Kind:
    """One kind of a rule's findings that predicts something else than the rule, or is judged otherwise."""

    name: str
    predicts: str | None = None  # None: the rule's prediction
    seen_between_iterations: bool = False  # the trace saw it change between steady-state iterations
    # the error a capture that fails on it gives (torch's words, matched case-insensitively in the failure's text)
    capture_error: str | None = None
    # adds nothing where another finding of its family names the same line (a sync-debug warning, a Python-level sync)
    secondary: bool = False


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    severity: str
    title: str
    hint: str
    needs_gpu: bool = False  # True: only the GPU run can detect it (the CPU run sees stream switches
    # through its CUDA stand-ins, so CG201 and CG502 are found there too; the GPU run confirms them)
    # What the finding predicts, for the GPU run to confirm or refute: CAPTURE_FAILS, REPLAY_DIFFERS, or
    # None for observations of the real run itself (CG403, CG501-CG503).
    predicts: str | None = None
    # a capture-fails prediction whose failure comes at the call itself (a sync, a query, a non-capturable
    # optimizer's step): a capture that got past its line without failing refutes it. An unjoined stream (CG203)
    # fails only at the end of capture, a foreign generator (CG401) where torch checks it: no such evidence there.
    fails_at_its_line: bool = False
    # found by comparing steady-state iterations: the trace itself saw the difference, so a replay that matched on
    # fresh inputs leaves it untested rather than refuted
    seen_between_iterations: bool = False
    # work off the capturing stream predicts a wrong replay, but the driver can also refuse it at the call while
    # another stream captures (H100, torch 2.11: an unforked side stream's `x.std()` failed the capture at its line
    # with `operation not permitted when stream is capturing`): a capture failed at its own line confirms it
    refused_at_its_line: bool = False
    cross_rank: bool = False  # compares ranks with each other: a world of one rank cannot establish it
    capture_error: str | None = None  # as Kind.capture_error, for every finding of the rule
    kinds: tuple[Kind, ...] = ()

    def kind(self, name: str | None) -> Kind | None:
        return next((k for k in self.kinds if k.name == name), None) if name else None


# Kinds (Finding.kind) that the verdicts and the merges tell apart
PYTHON_NUMBER = "python-number"  # CG402: a Python number passed to a device op changes between iterations
PAGEABLE_COPY = "pageable-copy"  # CG402: a copy from pageable host memory (capture fails)
UNCAPTURED_WAIT = "uncaptured-wait"  # CG201: the capturing stream waits on uncaptured work (capture fails)
SYNC_DEBUG = "sync-debug"  # CG101: a warning of torch.cuda.set_sync_debug_mode
PYTHON_LEVEL = "python-level"  # CG101: a sync-table entry in torch's Python code, outside any aten op
# CG407: the AccumulateGrad node predates cgtool's warmup: made in setup (or at import), on the default stream
MADE_BEFORE_WARMUP = "made-before-warmup"
_PAGEABLE_ERROR = "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned"

RULES: tuple[Rule, ...] = (
    Rule("CG001", "suppression", "error", "a `# cgtool: ignore` comment is malformed or names an unknown rule: it suppresses nothing",
         "Write `# cgtool: ignore[CG101]` (ids from docs/rules.md, comma-separated) or a bare `# cgtool: ignore`."),
    Rule("CG101", "sync", "error", "host reads a GPU value (.item(), bool(tensor), print(tensor), if tensor:)",
         "Keep the value on the GPU (torch.where, masking, clamp) or move the read out of the captured step.",
         predicts=CAPTURE_FAILS, fails_at_its_line=True,
         kinds=(Kind(SYNC_DEBUG, secondary=True), Kind(PYTHON_LEVEL, secondary=True))),
    Rule("CG102", "sync", "error", "output size depends on the data (nonzero, boolean-mask indexing, masked_select, unique)",
         "Use a fixed-size form: torch.where(mask, x, 0), multiply by the mask, or pad to a static maximum size.",
         predicts=CAPTURE_FAILS, fails_at_its_line=True),
    Rule("CG103", "sync", "error", "device-to-host copy (.cpu(), .tolist(), .numpy(), .to('cpu'))",
         "Copy into a preallocated pinned host buffer with non_blocking=True after the step, or read results after replay.",
         predicts=CAPTURE_FAILS, fails_at_its_line=True),
    Rule("CG104", "sync", "error", "explicit synchronization (torch.cuda.synchronize, Stream/Event.synchronize)",
         "Move the synchronize out of the step; order work with stream.wait_stream / event.wait instead.",
         predicts=CAPTURE_FAILS, fails_at_its_line=True),
    Rule("CG105", "sync", "error", "a stream or event is queried during capture (Stream.query(), Event.query())",
         "Poll outside the captured step (after replay), or order the work with stream.wait_stream / event.wait "
         "instead of asking whether it finished.", predicts=CAPTURE_FAILS, fails_at_its_line=True),
    Rule("CG201", "uncaptured-work", "error", "work issued on a stream that is not capturing; it runs once and is left out of the graph",
         "Issue all work on the capturing stream or on streams forked from it (s.wait_stream(torch.cuda.current_stream())).",
         predicts=REPLAY_DIFFERS, refused_at_its_line=True, kinds=(Kind(UNCAPTURED_WAIT, CAPTURE_FAILS),)),
    Rule("CG202", "default-stream", "error", "the step switches to the default stream, which capture does not record",
         "Remove `torch.cuda.stream(torch.cuda.default_stream())`; use the current stream or a side stream forked from it.",
         predicts=REPLAY_DIFFERS, refused_at_its_line=True),
    Rule("CG203", "unjoined-stream", "error", "a side stream forked from the capturing stream is not joined back",
         "Join it before the step returns: torch.cuda.current_stream().wait_stream(side_stream).",
         predicts=CAPTURE_FAILS, capture_error="capturing stream has unjoined work"),
    Rule("CG301", "dynamic-shape", "error", "tensor shapes change between iterations; replay keeps the captured shapes",
         "Pad inputs to a fixed size, or capture one graph per shape (as serving engines do per batch size).",
         predicts=REPLAY_DIFFERS, seen_between_iterations=True),
    Rule("CG302", "control-flow", "error", "the step runs different ops in different iterations; replay repeats the captured branch",
         "Make the branch a tensor operation (torch.where), or capture one graph per branch and pick the graph in Python.",
         predicts=REPLAY_DIFFERS, seen_between_iterations=True),
    Rule("CG401", "rng", "error", "random numbers from a generator the graph does not know",
         "Use the default CUDA generator, or register yours: graph.register_generator_state(gen) before capture.",
         predicts=CAPTURE_FAILS, capture_error="Attempt to increase offset for a CUDA generator not in capture mode"),
    Rule("CG402", "host-input", "error", "a host (CPU) value is copied to the GPU inside the step; replay reuses the captured value",
         "Keep a static device tensor and copy new values into it before replay (static.copy_(new, non_blocking=True) from pinned memory).",
         predicts=REPLAY_DIFFERS,
         kinds=(Kind(PYTHON_NUMBER, seen_between_iterations=True),
                Kind(PAGEABLE_COPY, CAPTURE_FAILS, capture_error=_PAGEABLE_ERROR))),
    Rule("CG403", "warmup", "warning", "lazy initialization inside capture (cuBLAS/cuDNN handles, cudnn.benchmark autotuning)",
         "Run enough warmup iterations on a side stream before capture; disable cudnn.benchmark during capture.", True),
    Rule("CG404", "capture-error", "error", "optimizer is not capturable",
         "Create the optimizer with capturable=True (Adam, AdamW, ...), or capture only forward and backward.",
         predicts=CAPTURE_FAILS, fails_at_its_line=True),
    Rule("CG405", "rng", "error", "the step reseeds the RNG or sets its state: eager resets it every iteration, a graph "
         "replay does not",
         "Seed once, in setup (or before capture), not in the step; for per-iteration randomness let the default "
         "generator advance (a graph advances its offset on every replay).", predicts=REPLAY_DIFFERS),
    Rule("CG406", "rebound-state", "error", "the step rebinds a state tensor to a new tensor instead of updating it in "
         "place; replay keeps reading the memory of the tensor that was live at capture",
         "Update the tensor in place (`m.avg.mul_(0.9).add_(y, alpha=0.1)`, `state['ema'].lerp_(x, 0.01)`, "
         "`buf.copy_(new)`), so the graph reads and writes the same memory every replay.",
         predicts=REPLAY_DIFFERS, seen_between_iterations=True),
    Rule("CG407", "warmup", "warning", "backward reuses an AccumulateGrad node made on another stream (autograd "
         "graph kept alive across iterations): backward synchronizes with that stream",
         "Keep no autograd graph alive between iterations (store `loss.detach()` or a float, not `loss`); run any "
         "step in setup inside the warmup stream's context (`with torch.cuda.stream(s):`), so the AccumulateGrad "
         "nodes are made on the stream that captures.", True,
         kinds=(Kind(MADE_BEFORE_WARMUP, CAPTURE_FAILS, capture_error="operation failed due to a previous error "
                     "during capture"),)),
    Rule("CG408", "python-state", "warning", "the step changes Python state every iteration (a list grows, a "
         "counter moves): a replay runs no Python, so it stays as it was at capture",
         "Keep the bookkeeping out of the captured step and do it after each replay (`graph.replay(); "
         "log.append(static_loss.clone())`), or hold the count in a device tensor updated in place "
         "(`steps.add_(1)`)."),
    Rule("CG501", "capture-error", "error", "capture failed",
         "See the CUDA error and the line named; fix the first problem cgtool reports above it.", True),
    Rule("CG502", "empty-graph", "warning", "the captured graph has no GPU work",
         "Make sure the step runs its work on the CUDA device passed to setup/inputs."),
    Rule("CG503", "replay-mismatch", "error", "replay computes something different from eager on the same inputs",
         "Look for per-iteration host values, unregistered state, or work outside the capturing stream.", True),
    # Distributed runs (--nproc-per-node): cgtool/checks/distributed.py compares the ranks.
    Rule("CG601", "distributed", "error", "ranks call different collectives, or a different number of them: a real run deadlocks",
         "Call the same collectives in the same order on every rank; keep rank-dependent work inside tensors "
         "(masks, torch.where), never around a collective.", cross_rank=True),
    Rule("CG602", "distributed", "error", "a collective issued during capture on a stream that is not capturing",
         "Issue collectives on the capturing stream, or on a side stream forked from it "
         "(side.wait_stream(torch.cuda.current_stream())) and joined back before the step returns.", True),
    Rule("CG603", "distributed", "error", "a rank failed while the other ranks waited on its collectives",
         "Fix the failing rank's own problem (its finding names the line); until then every real run of this "
         "step hangs in the other ranks' collectives.", cross_rank=True),
    Rule("CG604", "distributed", "error", "DistributedDataParallel constructed on the default stream: its capture fails",
         "Construct DDP in a side-stream context: s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream()); "
         "with torch.cuda.stream(s): model = DDP(model, ...)", True),
    Rule("CG605", "distributed", "error", "fewer than 11 DDP-enabled warmup iterations before capture",
         "Warm up at least 11 iterations on a side stream before capture (PyTorch's docs); --warmup 11, "
         "cgtool's default for distributed runs."),
    Rule("CG606", "distributed", "warning", "an NCCL error-handling setting that conflicts with capturing collectives",
         "Unset TORCH_NCCL_BLOCKING_WAIT (it makes the host wait on collectives); PyTorch's docs ask for "
         "TORCH_NCCL_ASYNC_ERROR_HANDLING=0 when capturing DDP."),
    Rule("CG607", "distributed", "error", "the NCCL in use is too old to capture collectives (needs 2.9.6 or newer)",
         "Install a PyTorch built with NCCL >= 2.9.6, or capture only the parts without collectives "
         "(torch.cuda.make_graphed_callables before wrapping in DDP)."),
    Rule("CG608", "distributed", "error", "a host-synchronizing collective inside the step (barrier, *_object): capture fails there",
         "Take barrier() out of the step (the collectives in the graph already order the ranks; put one before or "
         "after the captured region if the host must wait); exchange tensors on the GPU instead of Python objects "
         "(all_gather_into_tensor instead of all_gather_object).", predicts=CAPTURE_FAILS),
    Rule("CG609", "distributed", "warning", "all_to_all_single with host split sizes inside the step: the graph keeps the captured sizes",
         "Use fixed-capacity (padded) splits so the sizes never change, or exchange with split sizes that stay on "
         "the GPU (torch.ops.symm_mem.all_to_all_vdev); capture the expert layers piecewise and keep the routing "
         "exchange outside the graph.", predicts=REPLAY_DIFFERS),
    Rule("CG610", "distributed", "warning", "the captured step returns a functional collective's result it never waited on",
         "Wait inside the step: `out = out.wait()` (AsyncCollectiveTensor), or `use_local_output=False` and "
         "`out.full_tensor()` / `.to_local()` followed by an op, so the wait is part of the graph.", True),
    # torch.compile with CUDA graphs (mode="reduce-overhead" and friends): cgtool/checks/compiled.py reads what
    # CUDAGraph Trees did on the GPU (docs/compiled.md).
    Rule("CG701", "compiled", "error", "torch.compile skipped CUDA graphs for a compiled graph: it runs without them",
         "Fix the reason torch names at this line (a CPU tensor: move it to the GPU in setup; mutated inputs: return the "
         "new value instead of changing the input in place; incompatible op: keep .item() and data-dependent ops out "
         "of the compiled function).", True),
    Rule("CG702", "compiled", "warning", "torch.compile records new CUDA graphs again and again (re-records, a graph per input size)",
         "Keep input sizes and Python scalars fixed (pad to a few sizes, pass scalars as tensors), and keep "
         "parameters and static inputs at the same address (no re-assigning them between calls).", True),
    Rule("CG703", "compiled", "error", "torch.compile fell back from its CUDA graphs (pending backward, overwritten output)",
         "Call torch.compiler.cudagraph_mark_step_begin() before each step, run backward before the next forward "
         "(or use torch.no_grad() for inference), and clone outputs you keep across steps.", True),
    Rule("CG704", "compiled", "warning", "less than half of the step's GPU kernels run inside torch.compile's CUDA graphs",
         "Compile more of the step (the optimizer step, the loss), remove graph breaks and the CPU work between "
         "compiled calls; the report lists the kernels launched one by one.", True),
    Rule("CG705", "compiled", "warning", "a graph break inside compiled code: dynamo splits the function here and runs "
         "this line in Python between the compiled graphs",
         "Keep the value on the GPU (torch.where, clamp) instead of `.item()` or a tensor-valued `if`; move logging "
         "and `print` out of the compiled function (or log after the step); with CUDA graphs each break is another "
         "graph and a host round trip. `TORCH_LOGS=graph_breaks` shows torch's own text."),
)

RULE_BY_ID = {r.id: r for r in RULES}

# Rules whose evidence is the GPU run (the capture, the graph, replay versus eager): the CPU analysis skips them.
GPU_ONLY_RULES: tuple[str, ...] = tuple(r.id for r in RULES if r.needs_gpu)

# Rules that compare ranks with each other: a world of one rank (a plain run of a script written for ranks)
# cannot establish them; `--nproc-per-node N` can.
CROSS_RANK_RULES: tuple[str, ...] = tuple(r.id for r in RULES if r.cross_rank)
WORLD_OF_ONE = "comparing ranks needs --nproc-per-node N, N ≥ 2"


def predicted(rule_id: str, kind: str | None = None) -> str | None:
    """What a finding of `rule_id` (of that kind) predicts: CAPTURE_FAILS, REPLAY_DIFFERS or None."""
    rule = RULE_BY_ID.get(rule_id)
    if rule is None:
        return None
    k = rule.kind(kind)  # a kind may predict where its rule does not (CG407's AccumulateGrad made in setup)
    return k.predicts if k is not None and k.predicts is not None else rule.predicts


def seen_between_iterations(f: Finding) -> bool:
    """Whether the trace itself saw `f` change between steady-state iterations (by its rule or its kind)."""
    rule = RULE_BY_ID.get(f.rule)
    k = rule.kind(f.kind) if rule is not None else None
    return rule is not None and (rule.seen_between_iterations or (k is not None and k.seen_between_iterations))


def capture_error(f: Finding) -> str | None:
    """The error a capture that fails on `f` gives, in torch's words (its kind's, else its rule's), or None."""
    rule = RULE_BY_ID.get(f.rule)
    if rule is None:
        return None
    k = rule.kind(f.kind)
    return k.capture_error if k is not None and k.capture_error else rule.capture_error


def is_secondary(f: Finding) -> bool:
    rule = RULE_BY_ID.get(f.rule)
    k = rule.kind(f.kind) if rule is not None else None
    return k is not None and k.secondary


def finding(rule_id: str, message: str | None = None, *, file: str | None = None, line: int | None = None,
            source: str | None = None, function: str | None = None, hint: str | None = None,
            severity: str | None = None, evidence: str | None = None, kind: str | None = None,
            origin: str | None = None) -> Finding:
    """A Finding for rule `rule_id` (of `kind`, one of the rule's kinds); message and hint default to the rule's
    own; what it predicts comes from the rule and the kind."""
    rule = RULE_BY_ID[rule_id]
    if kind is not None and rule.kind(kind) is None:
        raise ValueError(f"{rule_id} has no kind {kind!r}")
    return Finding(
        rule=rule.id,
        category=rule.category,
        severity=severity or rule.severity,
        message=message or rule.title,
        file=file,
        line=line,
        source=source,
        hint=hint or rule.hint,
        function=function,
        evidence=evidence,
        kind=kind,
        origin=origin,
        predicts=predicted(rule_id, kind),
    )
