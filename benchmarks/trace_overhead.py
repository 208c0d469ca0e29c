"""Tracer overhead on a 1,000-block MLP (Linear(64,64) + ReLU + LayerNorm per block, ~4,000 aten ops per
iteration), on the CPU.

    .venv/bin/python benchmarks/trace_overhead.py [--blocks 1000] [--batch 32] [--rounds 7] [--train]

Reports the median eager iteration, the median traced iteration (as the CPU analysis runs it: CUDA
stand-ins, virtual CUDA, host tracking), the added time per traced iteration as a multiple of one eager
iteration (the bar: under 3x), and the fixed costs (stand-ins, tracer set-up, host watch of setup, checks).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from cgtool.checks import run_checks  # noqa: E402
from cgtool.trace.standins import cuda_standins, run_on_cpu  # noqa: E402
from cgtool.trace.tracer import Tracer  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.fc(x)))


def build(blocks: int, dim: int = 64) -> nn.Module:
    return nn.Sequential(*[Block(dim) for _ in range(blocks)])


def make_step(model: nn.Module, train: bool):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3) if train else None

    def step(x: torch.Tensor) -> torch.Tensor:
        if opt is None:
            with torch.no_grad():
                return model(x)
        opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def timed(fn, rounds: int, sync=lambda: None) -> list[float]:
    out = []
    for _ in range(rounds):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--train", action="store_true", help="forward + backward + SGD instead of inference")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu (the CPU analysis) or cuda (the GPU run's tracer)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    t0 = time.perf_counter()
    if cuda:  # the GPU run: real devices and streams, no stand-ins
        standins = contextlib.nullcontext()
        standins.paused = contextlib.nullcontext  # type: ignore[attr-defined]
        tracer = Tracer()
    else:
        standins = cuda_standins()
        standins.__enter__()
        tracer = Tracer(virtual_cuda=True, stream_probe=standins.probe, device="cpu", call=run_on_cpu)
        standins.record = tracer.stream_event
    tracer.__enter__()
    fixed_setup = time.perf_counter() - t0

    t0 = time.perf_counter()
    model = build(args.blocks).to(device)
    plain_setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    with standins.paused(), tracer.host_watch("setup"):
        watched = build(args.blocks).to(device)
    watched_setup = time.perf_counter() - t0
    del watched

    step = make_step(model, args.train)
    x = torch.randn(args.batch, 64, device=device)
    for _ in range(2):
        step(x)  # warm caches (allocator, first-call paths)

    counter = iter(range(10**9))

    def traced_iteration() -> None:
        with standins.paused(), tracer.iteration(next(counter), inputs={"x": x}):
            step(x)

    eager, traced = [], []
    for _ in range(args.rounds):  # alternate, so that load on a shared machine hits both alike
        eager += timed(lambda: step(x), 1, sync)
        traced += timed(traced_iteration, 1, sync)
    ops = len(tracer.trace.iterations[-1].ops)
    t0 = time.perf_counter()
    findings = run_checks(tracer.trace)
    checks = time.perf_counter() - t0
    t0 = time.perf_counter()
    tracer.__exit__(None, None, None)
    standins.__exit__(None, None, None)
    fixed_teardown = time.perf_counter() - t0

    e, t = statistics.median(eager), statistics.median(traced)
    print(f"model: {args.blocks} blocks, batch {args.batch}, {'train' if args.train else 'inference'} on {device}, "
          f"{torch.get_num_threads()} thread(s), torch {torch.__version__}")
    print(f"ops recorded per iteration: {ops}")
    print(f"eager iteration (median of {args.rounds}):  {e * 1e3:8.2f} ms")
    print(f"traced iteration (median of {args.rounds}): {t * 1e3:8.2f} ms   "
          f"({(t - e) / ops * 1e6 if ops else 0:.2f} us added per op)")
    print(f"added per traced iteration: {(t - e) / e:.2f}x one eager iteration (bar: < 3x)")
    print(f"fixed: stand-ins + tracer {fixed_setup * 1e3:.1f} ms, teardown {fixed_teardown * 1e3:.1f} ms, "
          f"host watch of setup +{(watched_setup - plain_setup) * 1e3:.1f} ms "
          f"({plain_setup * 1e3:.0f} -> {watched_setup * 1e3:.0f} ms), checks on {len(tracer.trace.iterations)} "
          f"iterations {checks * 1e3:.1f} ms ({len(findings)} findings)")


if __name__ == "__main__":
    main()
