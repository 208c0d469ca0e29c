"""The tracer: what it records per op and call, frames in the user's code, host tensors, JSON, and that
it never changes what the user's code computes."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from cgtool.model.trace import ATEN, CALL, Trace  # noqa: E402
from cgtool.trace.tracer import Tracer  # noqa: E402

THIS = __file__.removesuffix("c")


def _mlp_step(model, x):
    h = model(x)  # line of the model call
    return h.sum()


def _outer_step(model, x):
    return _mlp_step(model, x)  # the step's line


def _names(it):
    return [(op.kind, op.name) for op in it.ops]


def test_records_aten_ops_with_shapes_dtypes_devices_and_frames():
    model = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    with Tracer() as tracer:
        with tracer.iteration(0, inputs={"x": x}):
            _outer_step(model, x)
    trace = tracer.trace
    it = trace.iterations[0]
    addmm = next(op for op in it.ops if op.name == "aten.addmm")
    assert addmm.kind == ATEN and addmm.shapes == ((3,), (2, 4), (4, 3))
    assert addmm.dtypes == ("float32",) * 3 and addmm.devices == ("cpu",) * 3
    frame = trace.frames[addmm.frame]
    assert frame.file == THIS and frame.function == "_mlp_step" and frame.source == "h = model(x)  # line of the model call"
    assert trace.frames[addmm.outer].source == "return _mlp_step(model, x)  # the step's line"  # stops at the harness
    assert it.inputs == {"x": (2, 4)} and it.phase == "warmup"
    assert trace.tracer_error is None


def test_item_is_recorded_as_call_and_aten_op():
    x = torch.randn(3)
    with Tracer(virtual_cuda=True) as tracer:
        with tracer.iteration(0):
            x.sum().item()
    names = _names(tracer.trace.iterations[0])
    assert (CALL, "Tensor.item") in names and (ATEN, "aten._local_scalar_dense") in names
    item = next(op for op in tracer.trace.iterations[0].ops if op.name == "Tensor.item")
    assert item.host is False and item.detail["via"] == ()


def test_real_devices_make_cpu_tensors_host_tensors():
    """Without virtual_cuda (a GPU run's semantics) a CPU tensor is a host tensor: no GPU work, no sync."""
    with Tracer() as tracer:
        with tracer.iteration(0):
            torch.ones(2).sum().item()
    assert all(op.host for op in tracer.trace.iterations[0].ops)


def test_host_tensors_and_copies_to_the_device():
    device = torch.device("cpu")  # the CPU run's stand-in for the GPU
    with Tracer(virtual_cuda=True) as tracer:
        with tracer.host_watch("setup"):
            staging = torch.zeros(4)
        with tracer.iteration(0):
            made_here = torch.tensor([1.0, 2.0])
            on_device = made_here.to(device)
            staging.to(device)
            torch.tensor([3.0], device=device)
            on_device.sum().item()
            made_here.sum().item()
    ops = tracer.trace.iterations[0].ops
    moves = [op.detail for op in ops if op.detail and op.detail.get("move") == "h2d"]
    assert [(d["src"], d["pinned"]) for d in moves] == [("step", False), ("setup", False), ("step", False)]
    items = [op for op in ops if op.name == "Tensor.item"]
    assert [op.host for op in items] == [False, True]
    assert on_device is not made_here  # the CPU run hands back a distinct device copy, as a GPU would


def _moves_under_standins(setup, step):
    """Run setup() and inputs in host watches and step(state, x) in one iteration under the CUDA stand-ins, as the
    CPU analysis does (device torch.device("cuda"), x a step input on the device); the Tensor.to/torch.tensor
    calls of the step as (name, move) in order, and the tracer."""
    from cgtool.trace.standins import cuda_standins, run_on_cpu

    device = torch.device("cuda")
    with cuda_standins() as cuda:
        tracer = Tracer(virtual_cuda=True, stream_probe=cuda.probe, device="cpu", call=run_on_cpu)
        with tracer:
            with cuda.paused(), tracer.host_watch("setup"):
                state = setup(device)
            with cuda.paused(), tracer.host_watch("inputs"):
                x = torch.rand(2, 3).to(device)
            with cuda.paused(), tracer.iteration(0):
                step(state, x)
    assert tracer.trace.tracer_error is None
    return [(op.name, (op.detail or {}).get("move"), (op.detail or {}).get("pinned"))
            for op in tracer.trace.iterations[0].ops if op.name in ("Tensor.to", "torch.tensor")], tracer


def test_host_tensors_made_from_host_tensors_in_setup_are_host_tensors():
    """timm's mean/std: made in setup() without a device, then viewed and stacked (still host tensors on a GPU);
    the step's `.to(images.device)` copies them to the GPU (CG402 there), however the device is named."""
    def setup(device):
        mean = torch.tensor([0.5, 0.4, 0.3]).view(1, 3)
        return {"norm": torch.stack([mean, mean * 2]), "scaled": mean.mul(2)}

    def step(s, x):
        s["norm"].to(x.device)
        s["scaled"].to(x)
        s["scaled"].to(device=x.device)
        torch.tensor([1.0], device=x.device)

    moves, _ = _moves_under_standins(setup, step)
    assert moves == [("Tensor.to", "h2d", False), ("Tensor.to", "h2d", False), ("Tensor.to", "h2d", False),
                     ("torch.tensor", "h2d", False)]


def test_a_host_tensors_device_is_the_host():
    """No false alarm: a device tensor moved to a device tensor's device, a host tensor moved to another host
    tensor's device (a no-op on a GPU); a setup tensor made from a device tensor is a device tensor."""
    def setup(device):
        w = torch.ones(3, device=device)
        return {"h": torch.zeros(3), "h2": torch.ones(3) + 1, "d": w * 2, "mixed": torch.zeros(3) + w}

    def step(s, x):
        x.to(x.device)
        s["d"].to(x.device)
        s["mixed"].to(x.device)
        s["h"].to(s["h2"].device)
        s["h"].to(s["h2"])
        t = torch.tensor([1.0], device=s["h2"].device)
        t.to(device=s["h"].device)

    moves, _ = _moves_under_standins(setup, step)
    assert moves == [("Tensor.to", None, None)] * 5 + [("torch.tensor", None, None), ("Tensor.to", None, None)]


def test_tensors_made_from_numpy_buffers_and_dlpack_are_host_tensors():
    """torch.from_numpy, torch.frombuffer and torch.from_dlpack never reach a TorchFunctionMode: the tracer
    wraps them on the CPU run, so what they make in setup is a host tensor (its `.item()` is no sync, its move to
    the device is a copy) and the real functions are back after the tracer exits."""
    import numpy as np

    real = (torch.from_numpy, torch.frombuffer, torch.from_dlpack)

    def setup(device):
        return {"np": torch.from_numpy(np.linspace(0.5, 1.5, 4)), "buf": torch.frombuffer(bytearray(16), dtype=torch.float32),
                "dl": torch.from_dlpack(np.ones(3))}

    def step(s, x):
        s["np"].max().item()
        s["buf"].to(x.device)
        s["dl"].to(x.device)
        x.sum().item()

    moves, tracer = _moves_under_standins(setup, step)
    assert moves == [("Tensor.to", "h2d", False), ("Tensor.to", "h2d", False)]
    items = [op.host for op in tracer.trace.iterations[0].ops if op.name == "Tensor.item"]
    assert items == [True, False]
    assert (torch.from_numpy, torch.frombuffer, torch.from_dlpack) == real
    assert torch.from_numpy(np.ones(2)).dtype == torch.float64  # outside a tracer: the real function


def test_pinned_host_tensors_keep_their_treatment():
    """A pinned tensor moved to the device is a pinned copy (no capture failure); what setup() makes from it is
    left untagged as before (a view of pinned memory is pinned)."""
    def setup(device):
        buf = torch.zeros(6, pin_memory=True)
        return {"buf": buf, "view": buf.view(2, 3)}

    def step(s, x):
        s["buf"].to(x.device, non_blocking=True)
        s["view"].to(x.device, non_blocking=True)

    moves, _ = _moves_under_standins(setup, step)
    assert moves == [("Tensor.to", "h2d", True), ("Tensor.to", None, None)]


def test_python_numbers_and_generators_are_recorded():
    gen = torch.Generator()
    x = torch.randn(3)
    with Tracer(virtual_cuda=True) as tracer:
        with tracer.iteration(0):
            x.mul(0.5)
            torch.randn(2, generator=gen, device=torch.device("cpu"))
    ops = tracer.trace.iterations[0].ops
    mul = next(op for op in ops if op.name == "Tensor.mul")
    assert mul.detail["scalars"] == (0.5,) and mul.detail["out_shape"] == (3,)
    rand = next(op for op in ops if op.name == "torch.randn")
    assert rand.detail["generator"] == "custom"


def test_capture_phase_and_last_user_frame():
    def warm():
        torch.ones(1).add(1)

    def capture():
        torch.ones(1).sub(1)  # the last op

    with Tracer() as tracer:
        with tracer.iteration(0):
            warm()
        with tracer.iteration("capture"):
            capture()
    its = tracer.trace.iterations
    assert [(it.index, it.phase) for it in its] == [(0, "warmup"), (1, "capture")]
    assert tracer.last_user_frame().source == "torch.ones(1).sub(1)  # the last op"


def test_backward_ops_are_attributed_to_the_backward_line():
    w = torch.randn(3, requires_grad=True)

    def step():
        loss = (w * 2).sum()
        loss.backward()  # backward line

    with Tracer() as tracer:
        with tracer.iteration(0):
            step()
    trace = tracer.trace
    late = [op for op in trace.iterations[0].ops if trace.frames[op.frame].source == "loss.backward()  # backward line"]
    assert any(op.kind == ATEN for op in late)


def test_a_user_exception_passes_through_and_is_kept():
    with Tracer() as tracer:
        with pytest.raises(ZeroDivisionError):
            with tracer.iteration(0):
                torch.ones(1).add(1)
                _ = 1 / 0
    assert tracer.trace.iterations[0].error.startswith("ZeroDivisionError")


def test_a_tracer_failure_never_changes_results(monkeypatch):
    x = torch.randn(8, 8)
    expected = (x @ x).relu().sum()
    tracer = Tracer(virtual_cuda=True)

    def broken(*args, **kwargs):
        raise RuntimeError("tracer bug")

    monkeypatch.setattr(tracer, "on_aten", broken)
    with tracer:
        with tracer.iteration(0):
            got = (x @ x).relu().sum()
        with tracer.iteration(1):
            again = (x @ x).relu().sum()
    assert torch.equal(got, expected) and torch.equal(again, expected)
    assert tracer.trace.tracer_error == "RuntimeError: tracer bug"
    assert tracer.trace.iterations[1].ops == []  # recording stays off after a failure


def test_modes_are_removed_after_the_run():
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    with Tracer() as tracer:
        with tracer.iteration(0):
            torch.ones(1).add(1)
    assert _get_current_function_mode_stack() == [] and _get_current_dispatch_mode_stack() == []


def test_stream_events_carry_frame_and_position():
    def step():
        torch.ones(1).add(1)
        tracer.stream_event("wait-stream", 2, 1)  # the fork

    with Tracer() as tracer:
        with tracer.iteration(0):
            step()
            tracer.stream_event("sync-device")  # the harness's own call: not the user's, not recorded
    assert len(tracer.trace.events) == 1
    ev = tracer.trace.events[0]
    assert (ev.iteration, ev.kind, ev.stream, ev.target) == (0, "wait-stream", 2, 1)
    assert ev.position == len(tracer.trace.iterations[0].ops)
    assert tracer.trace.frames[ev.frame].source.endswith("# the fork")


def test_json_round_trip():
    model = torch.nn.Linear(4, 3)
    with Tracer(virtual_cuda=True) as tracer:
        with tracer.iteration(0):
            _mlp_step(model, torch.randn(2, 4)).item()
    data = json.loads(json.dumps(tracer.trace.to_json()))
    again = Trace.from_json(data)
    assert again.to_json() == data
    assert again.iterations[0].ops[0].shapes == tuple(tuple(s) for s in tracer.trace.iterations[0].ops[0].shapes)
    with pytest.raises(ValueError):
        Trace.from_json({**data, "schema": 99})


# ---- on a CUDA device: the tracer under a real capture ------------------------------------------

def _gpu_run(sample: str) -> dict:
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runner = os.path.join(root, "tests", "data", "gpu_trace_runner.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, runner, os.path.join(root, "samples", "hazards", sample)],
                       capture_output=True, text=True, timeout=300, env=env)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, r.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


@pytest.mark.gpu
@pytest.mark.parametrize("sample, rule, line, fails", [
    ("item_sync.py", "CG101", 30, True),
    ("tolist_sync.py", "CG103", 26, True),
    ("custom_generator.py", "CG401", 24, True),
    ("host_tensor.py", "CG402", 35, True),
    ("host_to_input_device.py", "CG402", 28, True),
    ("unjoined_stream.py", "CG203", 26, True),
    ("cuda_synchronize.py", "CG104", 27, True),
    ("default_stream.py", "CG202", 26, False),
    ("uncaptured_work.py", "CG201", 30, False),
    ("dynamic_shape.py", "CG301", 25, False),
    ("python_branch.py", "CG302", 21, False),
    ("reseed_in_step.py", "CG405", 36, False),
    ("rebind_state.py", "CG406", 40, False),
    ("rebind_dict_state.py", "CG406", 30, False),
])
def test_gpu_capture_names_the_line(sample, rule, line, fails):
    out = _gpu_run(sample)
    assert out["tracer_error"] is None
    assert (out["capture"] != "ok") == fails, out
    assert [rule, sample, line, "error"] in out["findings"], out


@pytest.mark.gpu
@pytest.mark.parametrize("sample", ["clean_mlp_inference.py", "clean_train_adamw.py", "clean_two_streams.py",
                                    "clean_dropout_train.py", "clean_ema_inplace.py"])
def test_gpu_clean_samples_capture_without_errors(sample):
    out = _gpu_run(sample)
    assert out["capture"] == "ok" and out["capturing_ops"] > 0, out
    assert [f for f in out["findings"] if f[3] == "error"] == [], out


def test_inputs_made_inside_an_iteration_are_not_the_steps(tmp_path):
    """A harness may call inputs(i) inside tracer.iteration(i): those ops are left out."""
    from cgtool.script.contract import load_script

    path = tmp_path / "s.py"
    path.write_text("import torch\n"
                    "def inputs(i, device):\n"
                    "    return {'x': torch.randn(4, 3).to(device)}\n"
                    "def step(x):\n"
                    "    return x * 2\n")
    script = load_script(str(path))
    with Tracer(virtual_cuda=True) as tracer:
        with tracer.iteration(0):
            script.call_step(script.call_setup("cpu"), script.call_inputs(0, torch.device("cpu")))
    lines = {tracer.trace.frames[op.frame].line for op in tracer.trace.iterations[0].ops}
    assert lines == {5}


def test_histc_with_a_range_is_no_data_dependent_size():
    """torch.histc(x, bins, min, max) with min != max has `bins` outputs and reads nothing on the host (the
    grouped-experts MoE path of transformers uses it); without a range CUDA reads min and max of the data."""
    from cgtool.checks.sync import check_sync

    tracer = Tracer(virtual_cuda=True)
    x = torch.rand(64)
    with tracer:
        with tracer.iteration(0, "capture"):
            torch.histc(x, bins=8, min=0, max=1)
            torch.histc(x, bins=8)
    ops = [op for op in tracer.trace.iterations[0].ops if op.name == "aten.histc"]
    assert [bool((op.detail or {}).get("fixed_size")) for op in ops] == [True, False]
    assert [f.rule for f in check_sync(tracer.trace)] == ["CG102"]


def test_a_lazy_module_in_setup_does_not_stop_the_cpu_trace(tmp_path):
    """nn.LazyLinear's parameter has no shape until its first forward: reading it stopped the tracer in setup's
    `.to(device)`, silently, and the `.item()` in the step went unreported ("no hazard found")."""
    from cgtool.pipeline.cpu_analysis import analyze_on_cpu
    from cgtool.script.contract import load_script

    path = tmp_path / "lazy.py"
    path.write_text("import torch\n\n\ndef setup(device):\n"
                    "    model = torch.nn.Sequential(torch.nn.LazyLinear(32), torch.nn.ReLU()).to(device)\n"
                    "    return {'model': model}\n\n\ndef inputs(i, device):\n"
                    "    return {'x': torch.randn(8, 16).to(device)}\n\n\ndef step(model, x):\n"
                    "    return model(x).sum().item()\n")
    trace, findings, errors = analyze_on_cpu(load_script(str(path)))
    assert trace.tracer_error is None and not errors
    assert [(f.rule, f.line) for f in findings] == [("CG101", 14)]
