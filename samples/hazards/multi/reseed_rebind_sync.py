"""Hazards (three): a reseed inside the step (eager draws the same dropout mask every iteration, replay does
not), a running average rebound to a new tensor (replay keeps reading the captured one's memory), and a timing
synchronize at the end. A GPU capture fails at the synchronize; the reseed and the rebinding are hazards of
replay that the analysis of the whole step names at their lines.
"""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(128, 128)
        self.drop = nn.Dropout(0.5)
        self.avg = torch.zeros(128)

    def forward(self, x):
        return self.drop(self.fc(x))


def setup(device):
    torch.manual_seed(0)
    net = Net().to(device).train()
    net.avg = net.avg.to(device)
    return {"net": net}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 128, generator=g).to(device)}


@torch.no_grad()
def step(net, x):
    torch.manual_seed(1234)  # expect: CG405
    y = net(x)
    net.avg = 0.9 * net.avg + 0.1 * y.mean(0)  # expect: CG406
    torch.cuda.synchronize()  # expect: CG104
    return y
