"""A CPU false alarm the GPU refutes (issue 20). `table` is a host tensor made in another thread during setup
(a prefetching loader's worker thread, here a ThreadPoolExecutor): TorchFunctionMode is per thread, so the CPU
analysis never sees it made on the host, takes it for a device tensor and reports CG101 at its `.item()`. The
real capture runs that line without failing (a host read is no sync) and fails later, at the synchronize: in
the same run the CG101 is marked refuted (info), the CG104 confirmed."""

from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    with ThreadPoolExecutor(max_workers=1) as pool:
        table = pool.submit(torch.linspace, 0.5, 1.5, 4).result()
    return {"net": nn.Linear(32, 32).to(device), "table": table}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(8, 32, generator=g).to(device)}


def step(net, table, x):
    y = net(x)
    scale = table.max().item()  # the CPU's CG101, refuted on the GPU
    torch.cuda.synchronize()  # expect: CG104
    return y * scale
