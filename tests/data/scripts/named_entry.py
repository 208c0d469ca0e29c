import torch
def setup(device):
    return (torch.nn.Linear(4, 4).to(device),)
def inputs(i, device):
    return [torch.ones(2, 4, device=device), torch.ones(2, 4, device=device)]
def train_step(model, xs):
    return model(xs[0]) + model(xs[1])
