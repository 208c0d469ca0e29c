"""Graph one submodule on its own, as torch.cuda.make_graphed_callables does (forward and backward for a
training call, forward only for a call without grad), and swap it into the step.

A module's call may mix tensors and other values (kwargs, flags, None): the tensors become the graph's static
inputs and the rest is fixed at capture; a later call with other non-tensor values or other shapes runs eagerly.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class Call:
    """One call of a module seen during an eager step: its arguments and the autograd mode."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    grad: bool  # grad enabled and an output requires grad: the call needs a backward graph too
    grad_enabled: bool = True  # torch.is_grad_enabled() at the call
    inference: bool = False  # inside torch.inference_mode()
    autocast: str | None = None  # the CUDA autocast dtype at the call ("bfloat16"), None without autocast


def call_context(call: Call) -> Any:
    """The grad mode and autocast state the call ran under, to capture it under the same (autocast without its
    weight cache, which make_graphed_callables refuses)."""
    import contextlib

    import torch

    stack = contextlib.ExitStack()
    if call.inference:
        stack.enter_context(torch.inference_mode())
    else:
        stack.enter_context(torch.set_grad_enabled(call.grad_enabled))
    if call.autocast is not None:
        stack.enter_context(torch.autocast("cuda", dtype=getattr(torch, call.autocast), cache_enabled=False))
    else:
        stack.enter_context(torch.autocast("cuda", enabled=False))
    return stack


@dataclass
class GraphedModule:
    module: Any
    forward: Any  # the replacement forward
    training: bool
    kernels: int | None = None
    fallbacks: list[str] = field(default_factory=list)
    path: str = ""


def describe_call(call: Call) -> Any:
    """The call as a CallSpec (model/partial.py): tensors by shape, dtype and layout, other values by repr."""
    from cgtool.model.partial import CallSpec

    return CallSpec(tuple(_node(a) for a in call.args), {str(k): _node(v) for k, v in call.kwargs.items()}, call.grad,
                    call.grad_enabled, call.inference, call.autocast)


def _node(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        channels_last = value.dim() == 4 and not value.is_contiguous() and value.is_contiguous(
            memory_format=torch.channels_last)
        return {"tensor": [list(value.shape), str(value.dtype).replace("torch.", ""), bool(value.requires_grad),
                           channels_last]}
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list):
        return {"seq": type(value).__name__, "items": [_node(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"map": {k: _node(v) for k, v in value.items()}}
    literal = value is None or isinstance(value, (bool, int, str)) or isinstance(value, float) and value == value \
        and abs(value) != float("inf")
    text = repr(value) if literal else f"<{type(value).__name__}>"
    return {"value": text, "literal": literal}


class _Slot:
    """Where a tensor was cut out of a call (None cannot mark it: `attention_mask=None` is a value)."""

    def __repr__(self) -> str:
        return "<tensor>"


SLOT = _Slot()


def _split(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], Any]:
    """The call's tensors in order, and a template with the tensors cut out."""
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, spec = tree_flatten((args, kwargs))
    tensors = [x for x in leaves if isinstance(x, torch.Tensor)]
    template = [SLOT if isinstance(x, torch.Tensor) else x for x in leaves]
    return tensors, (spec, template)


def _rebuild(template: Any, tensors: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    from torch.utils._pytree import tree_unflatten

    spec, leaves = template
    it = iter(tensors)
    return tree_unflatten([next(it) if x is SLOT else x for x in leaves], spec)


def _same_call(template: Any, shapes: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
    """The tensors of a call that matches the captured one (structure, values, shapes, dtypes), else None."""
    try:
        tensors, other = _split(args, kwargs)
    except Exception:
        return None
    if other[0] != template[0] or len(tensors) != len(shapes):
        return None
    try:
        if any(a is not b and bool(a != b) for a, b in zip(other[1], template[1]) if a is not SLOT):
            return None
    except Exception:  # values that do not compare (or not to a bool): not the captured call
        return None
    if [(t.shape, t.dtype, t.device) for t in tensors] != shapes:
        return None
    return tensors


def graph_module(module: Any, call: Call, stream: Any) -> GraphedModule:
    """Capture `module` for the call seen; raises what the capture raised."""
    import torch

    from cgtool.capture.pieces import kept_graphs

    tensors, template = _split(call.args, call.kwargs)
    shapes = [(t.shape, t.dtype, t.device) for t in tensors]
    # static inputs: for a training call, leaves that require grad where the call's tensors did (autograd of the
    # graphed callable); for a forward-only call, plain tensors (a copy into a leaf that requires grad would fail)
    static = tuple(t.detach().clone().requires_grad_(t.requires_grad and call.grad) for t in tensors)
    original = module.forward

    class Bound(torch.nn.Module):  # the module called with tensors only, its parameters visible to autograd
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *ts: Any) -> Any:
            a, k = _rebuild(template, ts)
            return original(*a, **k)

    bound = Bound()
    with kept_graphs() as kept, call_context(call):
        if call.grad:
            with accumulators_on(bound, stream):
                graphed = torch.cuda.make_graphed_callables(bound, static, num_warmup_iters=3,
                                                            allow_unused_input=True)
        else:
            graphed = _forward_graph(bound, static, stream)
    kernels = _kernel_nodes(kept)
    done = GraphedModule(module, None, call.grad, kernels)

    def forward(*args: Any, **kwargs: Any) -> Any:
        ts = _same_call(template, shapes, args, kwargs)
        if ts is None:
            done.fallbacks.append("a call with other arguments than the captured one ran eagerly")
            return original(*args, **kwargs)
        return graphed(*ts)

    done.forward = forward
    return done


@contextmanager
def accumulators_on(module: Any, stream: Any) -> Iterator[None]:
    """Every parameter's AccumulateGrad node made on `stream` (the stream the step runs on) and held while the
    body runs. make_graphed_callables warms up on a stream of its own and keeps its last warmup's autograd graph
    while capturing, so without this the graphed callable's parameters accumulate their gradients on that
    stream, not on the one the step's backward runs on (PyTorch warns: "The AccumulateGrad node's stream does not
    match the stream of the node that produced the incoming gradient")."""
    import torch

    with torch.cuda.stream(stream):
        held = [p.view_as(p) for p in module.parameters() if p.requires_grad]
    try:
        yield
    finally:
        del held


def _forward_graph(bound: Any, static: tuple[Any, ...], stream: Any) -> Any:
    """Forward-only capture (a call without grad): warm up on the side stream, capture, replay on call."""
    import torch

    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # under the call's grad mode (no grad or inference) and autocast
        for _ in range(3):
            bound(*static)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph, stream=stream):
        out = bound(*static)

    def run(*ts: Any) -> Any:
        with torch.no_grad():
            for dst, src in zip(static, ts):
                if dst.data_ptr() != src.data_ptr():
                    dst.copy_(src)
        graph.replay()
        return out

    return run


def _kernel_nodes(kept: list[Any]) -> int | None:
    try:
        from cgtool.graph.cuda import read_cuda_graph

        return sum(len(read_cuda_graph(g.raw_cuda_graph()).kernels) for g in kept)
    except Exception:  # not kept or cuda-bindings missing: the count is unknown, not zero
        return None


@contextmanager
def installed(graphed: list[GraphedModule]) -> Iterator[None]:
    """The step runs with these modules' graphs in place of their forward."""
    for g in graphed:
        g.module.forward = g.forward
    try:
        yield
    finally:
        for g in graphed:
            g.module.__dict__.pop("forward", None)
