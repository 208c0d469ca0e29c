import torch


def make_model(device):
    return torch.nn.Linear(4, 4).to(device).missing_method()


def setup(device):
    return {"model": make_model(device)}


def step(model):
    return model(torch.ones(1, 4))
