"""cgtool/trace/module_paths.py: the running module's path at each op, from global forward hooks."""

from __future__ import annotations

import torch
from torch import nn

from cgtool.trace.module_paths import ModulePaths


class Recorder:
    """Stands in for the tracer: the ops list the hooks read the position of, and the iteration index."""

    def __init__(self) -> None:
        self.ops: list[str] = []
        self.iteration_index = 3


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.Linear(4, 4)
        self.mlp = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def forward(self, x, ops):
        ops.append("block")
        x = self.attn(x)
        ops.append("attn.after")
        return self.mlp(x)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block()])
        self.shared = nn.Tanh()

    def forward(self, x, ops):
        for layer in self.layers:
            x = layer(x, ops)
        ops.append("top")
        return x


def test_each_op_gets_the_innermost_running_modules_path() -> None:
    rec = Recorder()
    paths = ModulePaths(rec)
    model = Model()

    def op(module, args):  # each leaf module's forward stands for one traced op (after the global pre-hook)
        rec.ops.append(type(module).__name__)

    hooks = [m.register_forward_pre_hook(op) for m in model.modules() if not list(m.children())]
    with paths.hooks():
        rec.ops.append("before")
        model(torch.zeros(1, 4), rec.ops)
        rec.ops.append("after")
    for h in hooks:
        h.remove()
    got = dict(zip(range(len(rec.ops)), paths.of_ops(3, len(rec.ops))))
    named = list(zip(rec.ops, got.values()))
    assert named == [
        ("before", ""), ("block", "layers.0"), ("Linear", "layers.0.attn"), ("attn.after", "layers.0"),
        ("Linear", "layers.0.mlp.0"), ("ReLU", "layers.0.mlp.1"), ("block", "layers.1"),
        ("Linear", "layers.1.attn"), ("attn.after", "layers.1"), ("Linear", "layers.1.mlp.0"),
        ("ReLU", "layers.1.mlp.1"), ("top", ""), ("after", ""),
    ]
    assert paths.of_ops(4, 2) == ["", ""]  # another iteration: nothing recorded


def test_a_module_called_from_outside_its_parent_is_named_by_its_class() -> None:
    rec = Recorder()
    paths = ModulePaths(rec)
    outer, stray = nn.Sequential(nn.Identity()), nn.Tanh()

    class Wrap(nn.Module):
        def forward(self, x):
            rec.ops.append("wrap")
            x = stray(x)
            rec.ops.append("in stray? no")
            return outer(x)

    def op(module, args):
        rec.ops.append(type(module).__name__)

    h = stray.register_forward_pre_hook(op)
    with paths.hooks():
        Wrap()(torch.zeros(2))
    h.remove()
    assert list(zip(rec.ops, paths.of_ops(3, len(rec.ops)))) == [("wrap", ""), ("Tanh", "Tanh"), ("in stray? no", "")]


def test_no_marks_without_a_recording_iteration() -> None:
    rec = Recorder()
    rec.ops = None  # type: ignore[assignment]
    paths = ModulePaths(rec)
    with paths.hooks():
        nn.Linear(2, 2)(torch.zeros(2))
    assert paths.marks == {}
