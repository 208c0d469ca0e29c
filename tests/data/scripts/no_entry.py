import torch

def setup(device):
    return {}

def forward(x):
    return x
