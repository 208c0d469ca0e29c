"""A CPU false alarm the GPU refutes (issue 20). `table` is a host tensor made from NumPy in setup; the CPU
analysis does not see `torch.from_numpy` as host-made, so it takes the tensor for a device tensor and reports
CG101 at its `.item()`. The real capture runs that line without failing (a host read is no sync) and fails
later, at the synchronize: in the same run the CG101 is marked refuted (info), the CG104 confirmed."""

import numpy as np
import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {"net": nn.Linear(32, 32).to(device), "table": torch.from_numpy(np.linspace(0.5, 1.5, 4))}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(8, 32, generator=g).to(device)}


def step(net, table, x):
    y = net(x)
    scale = table.max().item()  # the CPU's CG101, refuted on the GPU
    torch.cuda.synchronize()  # expect: CG104
    return y * scale
