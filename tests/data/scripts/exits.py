import sys

import torch


def step():
    x = torch.ones(2)
    sys.exit("stop here")
