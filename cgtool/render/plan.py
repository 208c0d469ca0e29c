"""The module map's recommendation as code a user pastes into their script (`modules-plan.py`): the recommended
modules graphed with torch.cuda.make_graphed_callables (a training call) or torch.cuda.graph (a call without grad),
under the autocast and grad settings of their call in the step, from sample arguments of the recorded shapes,
dtypes and layouts. Plain PyTorch: the pasted code does not import cgtool."""

from __future__ import annotations

from typing import Any

from cgtool.model.partial import GRAPHED, CallSpec, ModuleEntry, ModuleMap

HELPER = '''import torch
from torch.utils._pytree import tree_flatten, tree_unflatten


def graph_module(module, args, kwargs=None, backward=True):
    """Swap module.forward for a CUDA graph of calls shaped like module(*args, **kwargs). The tensors are the
    graph's inputs; every other argument is fixed at its value here; a call with other shapes, dtypes or fixed
    values runs eagerly. backward=True: forward and backward (make_graphed_callables); else forward only."""
    leaves, spec = tree_flatten((tuple(args), dict(kwargs or {})))
    slots = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    sample = tuple(leaves[i] for i in slots)
    eager = module.forward

    class Positional(torch.nn.Module):  # make_graphed_callables takes tensors positionally
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, *tensors):
            full = list(leaves)
            for i, t in zip(slots, tensors):
                full[i] = t
            a, k = tree_unflatten(full, spec)
            return eager(*a, **k)

    if backward:
        graphed = torch.cuda.make_graphed_callables(Positional(), sample, allow_unused_input=True)
    else:
        graphed = forward_graph(Positional(), sample)
    meta = [(t.shape, t.dtype) for t in sample]

    def forward(*a, **k):
        ls, sp = tree_flatten((a, k))
        ts = [x for x in ls if isinstance(x, torch.Tensor)]
        try:
            same = sp == spec and [(t.shape, t.dtype) for t in ts] == meta and all(
                x is y or x == y for i, (x, y) in enumerate(zip(ls, leaves)) if i not in slots)
        except Exception:
            same = False
        return graphed(*ts) if same else eager(*a, **k)

    module.forward = forward
    return module


def forward_graph(fn, sample):
    """A forward-only graph (a call without grad): warm up on a side stream, capture, replay with copied inputs.
    The output tensors are the graph's own: the next call overwrites them."""
    static = [t.detach().clone() for t in sample]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(*static)

    def run(*tensors):
        with torch.no_grad():
            for dst, src in zip(static, tensors):
                dst.copy_(src)
        graph.replay()
        return out

    return run


def put_back(modules, saved):
    """Parameters and buffers as they were before capture (its warmup calls move BatchNorm's running stats)."""
    with torch.no_grad():
        for m, s in zip(modules, saved):
            for k, v in m.state_dict().items():
                v.copy_(s[k])
'''


def _planned(m: ModuleMap) -> list[ModuleEntry]:
    """The recommended set's entries (`m.graphed`, with a recorded call), none when its graphed step was checked
    against eager and differs (a plan must not be pasted then)."""
    if m.replay is not None and m.replay.status != "match":
        return []
    return [e for e in m.modules if e.status == GRAPHED and e.path in m.graphed and e.call is not None]


def _with_calls(entries: list[ModuleEntry]) -> list[tuple[ModuleEntry, CallSpec]]:
    """Each planned entry with its recorded call (_planned keeps only entries that have one)."""
    return [(e, e.call) for e in entries if e.call is not None]


def plan_code(m: ModuleMap, script: str = "") -> str:
    """The code for the recommended set (`m.graphed`), '' when nothing is recommended or the set differs from
    eager; a set whose replay was not checked (--no-replay-check) gets the code with that said in its header."""
    entries = _planned(m)
    if not entries:
        return ""
    roots = sorted({e.path.split(".", 1)[0] for e in entries})
    speed = f", measured {m.timings.speedup:.2f}× faster than eager" if m.timings is not None else ""
    match = "was not checked against eager"
    if m.replay is not None and m.replay.status == "match":
        match = (f"matches eager over {m.replay.steps} consecutive step{'s' if m.replay.steps != 1 else ''} from "
                 "identical state")
    lines = [f"# cgtool's plan{' for ' + script if script else ''}: graph {', '.join(f'`{e.path}`' for e in entries)}"
             f"{speed}; the step with them graphed {match}.",
             "# Paste after setup (model on the GPU, in the train()/eval() mode of the step) and before the loop.",
             "# Caveats: each graph holds the shapes, dtypes and layouts below (a call with others runs eagerly);",
             "# non-tensor arguments are fixed at these values; capture warms each module up (3 calls), so the",
             "# state is saved before and put back after. PyTorch may warn while capturing that \"The AccumulateGrad",
             "# node's stream does not match\": make_graphed_callables warms up on a stream of its own and keeps that",
             "# warmup's autograd graph while capturing, so the parameters' gradients are accumulated on that stream;",
             "# backward synchronizes across (cgtool checked the set against eager over the steps above).",
             HELPER, "", f"_saved = [{{k: v.detach().clone() for k, v in m.state_dict().items()}} for m in "
             f"({', '.join(roots)},)]"]
    for e, call in _with_calls(entries):
        lines += _graph_call(e, call)
    lines += [f"put_back(({', '.join(roots)},), _saved)", "del _saved"]
    unset = [e.path for e, call in _with_calls(entries) if _has_unset(call)]
    if unset:
        lines.insert(lines.index(HELPER), "# Set the arguments marked `TODO` as your step passes them ("
                     + ", ".join(f"`{p}`" for p in unset) + ").")
    return "\n".join(lines) + "\n"


def plan_calls(m: ModuleMap) -> list[str]:
    """The plan's graph_module(...) lines alone, for the console (the helper is in modules-plan.py)."""
    lines: list[str] = []
    for e, call in _with_calls(_planned(m)):
        lines += _graph_call(e, call)
    return lines


def _graph_call(e: ModuleEntry, call: CallSpec) -> list[str]:
    args = "(" + "".join(_source(a, call.backward) + ", " for a in call.args).rstrip(" ") + ")"
    kwargs = "{" + ", ".join(f"{k!r}: {_source(v, call.backward)}" for k, v in call.kwargs.items()) + "}"
    line = f"graph_module({module_source(e.path)}, {args}, {kwargs}, backward={call.backward})"
    contexts = []
    if call.inference:
        contexts.append("torch.inference_mode()")
    elif not call.grad_enabled:
        contexts.append("torch.no_grad()")
    if call.autocast:
        contexts.append(f'torch.autocast("cuda", dtype=torch.{call.autocast}, cache_enabled=False)')
    if not contexts:
        return [line]
    return [f"with {', '.join(contexts)}:  # as the step calls it", "    " + line]


def module_source(path: str) -> str:
    """`model.blocks.0.attn` -> `model.blocks[0].attn`."""
    parts = path.split(".")
    text = parts[0]
    for p in parts[1:]:
        text += f"[{p}]" if p.isdigit() else f".{p}"
    return text


def _source(node: dict[str, Any], backward: bool = True) -> str:
    """A sample argument as code: floating tensors random, integer ones zeros, bool ones all True (a mask that
    keeps everything); requires grad where the call's did and the graph has a backward."""
    if "tensor" in node:
        shape, dtype, requires_grad, channels_last = node["tensor"]
        dims = ", ".join(str(int(d)) for d in shape)
        make = "randn" if dtype.startswith(("float", "bfloat", "complex")) else "ones" if dtype == "bool" else "zeros"
        text = f'torch.{make}(({dims}{"," if len(shape) == 1 else ""}), device="cuda", dtype=torch.{dtype})'
        if channels_last:
            text += ".to(memory_format=torch.channels_last)"
        return text + (".requires_grad_()" if requires_grad and backward else "")
    if "seq" in node:
        items = [_source(n, backward) for n in node["items"]]
        if node["seq"] == "tuple":
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if "map" in node:
        return "{" + ", ".join(f"{k!r}: {_source(v, backward)}" for k, v in node["map"].items()) + "}"
    return node["value"] if node.get("literal") else f"None  # TODO: {node['value']} as in the step\n"


def _has_unset(call: CallSpec) -> bool:
    return "TODO" in "".join(_source(n) for n in list(call.args) + list(call.kwargs.values()))
