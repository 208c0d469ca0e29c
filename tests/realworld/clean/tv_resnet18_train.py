"""Clean: torchvision resnet18(weights=None, num_classes=10) training step with SGD + momentum.

Models supervised image-classification training: BatchNorm in train mode (running stats and
num_batches_tracked are updated on the device), cross-entropy with label smoothing, SGD with
Nesterov momentum (no host-side step counter, so no `capturable` flag is needed).
Expected: no error findings; capture succeeds and replay matches eager from the same state.
"""

import torch
import torch.nn.functional as F
import torchvision

BATCH, RES, CLASSES = 8, 64, 10


def setup(device):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=CLASSES).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.randn(BATCH, 3, RES, RES, generator=g).to(device),
            "labels": torch.randint(0, CLASSES, (BATCH,), generator=g).to(device)}


def step(model, opt, images, labels):
    opt.zero_grad(set_to_none=False)
    loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
    loss.backward()
    opt.step()
    return loss.detach()
