"""checks/common.py: align — two iterations' ops lined up past a divergence, so one branch does not hide the
hazards after it (a gradient-accumulation branch before a changing EMA weight: both found in one run)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cgtool.checks.common import RESYNC_WINDOW, align
from cgtool.model.trace import Iteration, OpRecord


def _it(index: int, names: list[str]) -> Iteration:
    return Iteration(index, ops=[OpRecord("aten", n, frame=1) for n in names])


def _names(pairs) -> list[tuple[str, str]]:
    return [(a.name, b.name) for a, b in pairs]


BODY = [f"op{k}" for k in range(12)]


def test_an_extra_block_on_either_side_is_skipped_and_the_rest_paired():
    a, b = BODY, BODY[:3] + ["extra1", "extra2"] + BODY[3:] + ["tail"]
    al = align(_it(1, a), _it(2, b))
    assert al.diverge_at == 3
    assert _names(al.pairs) == [(n, n) for n in BODY]
    al = align(_it(1, b), _it(2, a))
    assert _names(al.pairs) == [(n, n) for n in BODY]


def test_a_divergence_with_no_run_of_matching_ops_after_it_pairs_the_prefix_only():
    a = BODY[:4] + [f"x{k}" for k in range(RESYNC_WINDOW - 1)] + ["end"]
    b = BODY[:4] + [f"y{k}" for k in range(RESYNC_WINDOW - 1)] + ["other"]
    assert _names(align(_it(1, a), _it(2, b)).pairs) == [(n, n) for n in BODY[:4]]


def test_equal_iterations_pair_everything():
    al = align(_it(1, BODY), _it(2, BODY))
    assert al.diverge_at is None and len(al.pairs) == len(BODY)


@given(st.lists(st.sampled_from("abcd"), max_size=60), st.lists(st.sampled_from("abcd"), max_size=60))
def test_pairs_are_equal_ops_in_order_on_both_sides(xs, ys):
    a, b = _it(1, list(xs)), _it(2, list(ys))
    al = align(a, b)
    where_a, where_b = {id(o): i for i, o in enumerate(a.ops)}, {id(o): i for i, o in enumerate(b.ops)}
    ia, ib = [where_a[id(x)] for x, _ in al.pairs], [where_b[id(y)] for _, y in al.pairs]
    assert all(a.name == b.name for a, b in al.pairs)
    assert ia == sorted(set(ia)) and ib == sorted(set(ib))  # each op once, in order on both sides


ACCUMULATES = '''import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)
    ema = [p.detach().clone() for p in model.parameters()]
    return {"model": model, "opt": opt, "ema": ema, "count": [0]}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(8, 16, generator=g).to(device), "y": torch.randn(8, 1, generator=g).to(device)}


def step(model, opt, ema, count, x, y):
    count[0] += 1
    for g in opt.param_groups:
        g["lr"] = 1e-3 * min(1.0, count[0] / 100)
    nn.functional.mse_loss(model(x), y).backward()
    if count[0] % 2 == 0:  # expect: CG302
        opt.step()
        opt.zero_grad(set_to_none=False)
    decay = min(0.999, (1 + count[0]) / (10 + count[0]))
    with torch.no_grad():
        for e, p in zip(ema, model.parameters()):
            e.lerp_(p, 1 - decay)  # expect: CG402
    return count[0]
'''


def test_a_branch_does_not_hide_the_changing_numbers_after_it(tmp_path):
    import pytest

    pytest.importorskip("torch")
    from cgtool.pipeline.cpu_analysis import analyze_on_cpu
    from cgtool.script.contract import load_script

    path = tmp_path / "step.py"
    path.write_text(ACCUMULATES)
    _, findings, errors = analyze_on_cpu(load_script(str(path)), warmup=4)
    assert not errors
    lines = ACCUMULATES.splitlines()
    at = {(f.rule, lines[f.line - 1].strip()) for f in findings if f.severity == "error"}
    assert ("CG302", "if count[0] % 2 == 0:  # expect: CG302") in at, at
    assert ("CG402", "e.lerp_(p, 1 - decay)  # expect: CG402") in at, at
