"""The replay check's local-shard view of DTensor state (cgtool/capture/shards.py), on CPU in a gloo world of one:
tensor-parallel parameters, their gradients and Adam's state are compared and restored as local tensors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from cgtool.capture.shards import ShardState, is_dtensor, local, local_clone_tree  # noqa: E402
from cgtool.capture.tensors import compare, restore, snapshot  # noqa: E402


@pytest.fixture
def group():
    if dist.is_initialized():
        pytest.skip("a process group is already up in this process")
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        yield
    finally:
        dist.destroy_process_group()


def tp_model():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))
    parallelize_module(mlp, init_device_mesh("cpu", (1,)), {"0": ColwiseParallel(), "2": RowwiseParallel()})
    return mlp


def train_step(mlp, opt, x, set_to_none=False):
    opt.zero_grad(set_to_none=set_to_none)
    loss = mlp(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss.detach()


def test_dtensor_state_is_local_shards_with_grads_and_optimizer_state(group):
    mlp = tp_model()
    opt = torch.optim.Adam(mlp.parameters(), lr=1e-2)
    x = torch.randn(4, 8)
    train_step(mlp, opt, x)
    state = {"mlp": mlp, "opt": opt}
    assert is_dtensor(mlp[0].weight)
    shards = ShardState(state)
    names = [n for n, _ in shards.pairs]
    assert "state['mlp'].0.weight (local shard)" in names and "state['mlp'].0.weight.grad (local shard)" in names
    assert any(".exp_avg" in n for n in names)
    assert not any(is_dtensor(t) for _, t in shards.pairs)
    # snapshot, restore and compare on local tensors: a step changes them, restoring brings them back
    start = snapshot(shards.pairs)
    train_step(mlp, opt, x)
    after = snapshot(shards.pairs)
    assert not all(compare(n, a, b).ok for (n, _), a, b in zip(shards.pairs, start, after))
    restore(shards.pairs, start)
    assert all(compare(n, a, local(t)).ok for (n, t), a in zip(shards.pairs, start))
    assert torch.equal(mlp[0].weight.to_local(), start[names.index("state['mlp'].0.weight (local shard)")])
    assert shards.replaced() == set()


def test_gradients_the_step_makes_anew_are_not_compared(group):
    mlp = tp_model()
    opt = torch.optim.SGD(mlp.parameters(), lr=1e-2)
    x = torch.randn(4, 8)
    train_step(mlp, opt, x, set_to_none=True)
    shards = ShardState({"mlp": mlp, "opt": opt})
    train_step(mlp, opt, x, set_to_none=True)  # zero_grad(set_to_none=True): new .grad tensors
    assert "state['mlp'].0.weight.grad (local shard)" in shards.replaced()


def test_outputs_are_local_clones(group):
    mlp = tp_model()
    with torch.no_grad():
        out = mlp(torch.randn(4, 8))
    [(name, t)] = local_clone_tree(out)
    assert name == "output" and not is_dtensor(t) and t.shape == (4, 8)


def test_plain_tensors_without_a_group_have_no_grads_added():
    lin = torch.nn.Linear(4, 4)
    lin(torch.randn(2, 4)).sum().backward()
    shards = ShardState({"m": lin})
    assert [n for n, _ in shards.pairs] == ["state['m'].weight", "state['m'].bias"]


def test_an_unwaited_functional_collective_is_named_and_read_without_its_wait(group):
    from torch.distributed import _functional_collectives as funcol

    from cgtool.capture.shards import is_unwaited, unwaited_outputs

    out = funcol.all_reduce(torch.ones(4), "sum", dist.group.WORLD)
    if not is_unwaited(out):
        pytest.skip("this torch waits functional collectives at once on CPU")
    assert unwaited_outputs({"y": out}) == ["output['y']"]
    buffer = local(out, wait=False)  # the captured output: its buffer, no wait on the capture's work
    assert type(buffer) is torch.Tensor and is_unwaited(out)
    waited = local(out)  # an eager output: waited as any use would
    assert torch.equal(waited, torch.ones(4)) and not is_unwaited(out)
