"""The CUDA stand-ins of the CPU run: scripts written for a GPU run on CPU, stream calls are recorded,
and everything is restored afterwards."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from cgtool.trace.standins import CAPTURE_STREAM, DEFAULT_STREAM, cuda_standins  # noqa: E402

PATCHED = ["is_available", "device_count", "Stream", "Event", "stream", "current_stream", "default_stream",
           "synchronize", "set_stream", "get_device_name", "get_device_properties"]


def _recorder():
    calls = []
    return calls, lambda kind, stream, target: calls.append((kind, stream, target))


def test_streams_events_and_syncs_are_recorded():
    calls, record = _recorder()
    with cuda_standins(record) as cuda:
        side = torch.cuda.Stream()
        main = torch.cuda.current_stream()
        assert main.stream_id == CAPTURE_STREAM and torch.cuda.default_stream().stream_id == DEFAULT_STREAM
        side.wait_stream(main)
        with torch.cuda.stream(side):
            assert cuda.probe(0) == (side.stream_id, None)
            done = torch.cuda.Event()
            done.record()
        assert cuda.probe(0)[0] == CAPTURE_STREAM
        main.wait_event(done)
        torch.cuda.synchronize()
        done.synchronize()
        assert side.query() and done.elapsed_time(done) == 0.0
    s = side.stream_id
    assert calls == [("create", s, None), ("wait-stream", s, CAPTURE_STREAM), ("switch", s, None),
                     ("record-event", s, done.event_id), ("wait-event", CAPTURE_STREAM, done.event_id),
                     ("sync-device", None, None), ("sync-event", None, done.event_id), ("query-stream", s, None),
                     ("elapsed-time", None, done.event_id)]


def test_everything_is_restored():
    before = {name: getattr(torch.cuda, name) for name in PATCHED}
    generator, scaler_init = torch.Generator, torch.amp.GradScaler.__init__
    with cuda_standins():
        assert torch.cuda.Stream is not before["Stream"]
    assert {name: getattr(torch.cuda, name) for name in PATCHED} == before
    assert torch.Generator is generator and torch.amp.GradScaler.__init__ is scaler_init
    if not torch.cuda.is_available():
        with pytest.raises(AssertionError):
            torch.cuda.synchronize()  # the real one again: no CUDA in this build


def test_restored_after_an_exception_and_no_nesting():
    before = torch.cuda.synchronize
    with pytest.raises(KeyError):
        with cuda_standins():
            with pytest.raises(RuntimeError):
                with cuda_standins():
                    pass
            raise KeyError("user error")
    assert torch.cuda.synchronize is before


def test_cuda_code_runs_on_the_cpu():
    with cuda_standins():
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1  # as the user's code sees it
        model = torch.nn.Linear(4, 4).cuda()
        x = torch.randn(2, 4, device="cuda")
        y = model(x.to("cuda:0", non_blocking=True)).pin_memory()
        y.record_stream(torch.cuda.current_stream())
        assert y.device.type == "cpu" and torch.empty(3, pin_memory=True).device.type == "cpu"
        torch.cuda.get_device_name(0), torch.cuda.get_device_capability(), torch.cuda.mem_get_info()
        with torch.cuda.nvtx.range("region"):
            torch.cuda.nvtx.range_push("x")
            torch.cuda.nvtx.range_pop()


def test_cuda_generators_remember_the_device_asked_for():
    with cuda_standins():
        gen = torch.Generator(device="cuda")
        host = torch.Generator()
        assert isinstance(gen, torch.Generator) and isinstance(torch.default_generator, torch.Generator)
        assert gen._cgtool_device == "device" and host._cgtool_device == "host"
        assert torch.randn(2, generator=gen.manual_seed(3)).shape == (2,)
        assert torch.cuda.default_generators[0] is torch.default_generator


def test_capturable_optimizers_and_grad_scaler_run_on_the_cpu():
    with cuda_standins():
        model = torch.nn.Linear(3, 3)
        opt = torch.optim.AdamW(model.parameters(), capturable=True)
        scaler = torch.amp.GradScaler("cuda")
        assert scaler.is_enabled()
        scaler.scale(model(torch.randn(2, 3)).sum()).backward()
        scaler.step(opt)
        scaler.update()
    with pytest.raises(Exception):  # noqa: B017 - torch's own check is back (CPU params, capturable)
        model(torch.randn(2, 3)).sum().backward()
        torch.optim.AdamW(model.parameters(), capturable=True).step()
    assert "cpu" not in __import__("torch.optim.optimizer", fromlist=["x"])._get_capturable_supported_devices()


def test_a_library_in_a_folder_named_torch_still_gets_the_gpu_answers(tmp_path):
    """The GPU image keeps its venv in /opt/torch/.venv: transformers' files there contain "/torch/" but are not
    torch's, so during the emulated capture they must see is_current_stream_capturing() true (a path test for
    "/torch/" made the whole library look like torch, and its capture-aware checks ran: a false CG101)."""
    lib = tmp_path / "opt" / "torch" / ".venv" / "lib" / "site-packages" / "fakelib" / "masking.py"
    lib.parent.mkdir(parents=True)
    lib.write_text("import torch\ndef ask():\n    return torch.cuda.is_current_stream_capturing(), torch.cuda.is_available()\n")
    space: dict = {}
    exec(compile(lib.read_text(), str(lib), "exec"), space)
    with cuda_standins() as cuda:
        cuda.capturing = True
        assert space["ask"]() == (True, True)
        cuda.capturing = False
        assert space["ask"]()[0] is False
