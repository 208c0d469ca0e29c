"""The GPU suite's plain-PyTorch truth scripts (tests/gpu/*_truth.py) on the CPU machine: each still imports with
its shared helpers (tests/gpu/truth_common.py), and those helpers load a sample and name its state's tensors."""

from __future__ import annotations

import glob
import importlib
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU = os.path.join(ROOT, "tests", "gpu")
TRUTHS = sorted({*glob.glob(os.path.join(GPU, "*_truth.py")), os.path.join(GPU, "plan_probe.py")})


def test_every_truth_script_imports_with_the_shared_helpers():
    """As `python tests/gpu/X_truth.py` runs them (their folder first on the path), without running main()."""
    pytest.importorskip("torch")
    names = [os.path.splitext(os.path.basename(p))[0] for p in TRUTHS]
    sys.path.insert(0, GPU)
    try:
        for name in names:
            module = importlib.import_module(name)
            assert callable(getattr(module, "main", None)), name
    finally:
        sys.path.remove(GPU)
        for name in [*names, "truth_common"]:
            sys.modules.pop(name, None)


def test_load_and_tensors_of_on_a_training_sample():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, GPU)
    try:
        from truth_common import load, tensors_of
    finally:
        sys.path.remove(GPU)
    mod = load(os.path.join(ROOT, "samples", "transformer_train.py"))
    state = mod.setup(torch.device("cpu"))
    names = tensors_of(state)
    assert names and all(isinstance(t, torch.Tensor) for t in names.values())
    assert any(n.startswith(("model.", "opt")) for n in names), sorted(names)
