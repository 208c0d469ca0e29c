import torch

def step(x)
    return x
