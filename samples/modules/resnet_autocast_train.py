"""Module map (`cgtool capture --modules 1`), training: a torchvision ResNet-18 (random weights, channels_last) under
bf16 autocast, SGD with momentum, logging the loss with `.item()` (so the whole step cannot be captured).

The map graphs `model` whole, forward and backward (make_graphed_callables), under the step's autocast (bf16,
without autocast's cache) and with the channels_last input it saw; the step with it graphed matches eager from
identical state (BatchNorm's running stats moved by capture's warmup put back). Needs torchvision.
"""

import torch
import torch.nn.functional as F
import torchvision

BATCH, RES, CLASSES = 32, 64, 10


def setup(device):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=CLASSES).to(device)
    model = model.to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {"model": model, "opt": opt, "log": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    images = torch.randn(BATCH, 3, RES, RES, generator=g).to(device).to(memory_format=torch.channels_last)
    return {"images": images, "labels": torch.randint(0, CLASSES, (BATCH,), generator=g).to(device)}


def step(model, opt, log, images, labels):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(images.device.type, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()
    log.append(loss.item())  # expect: CG101
    return loss.detach()
