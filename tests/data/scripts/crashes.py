import os
import signal

import torch


def setup(device):
    print("about to crash")
    os.kill(os.getpid(), signal.SIGSEGV)


def step():
    return torch.ones(1)
