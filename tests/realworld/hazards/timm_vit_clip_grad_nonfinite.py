"""Hazard: gradient clipping with `error_if_nonfinite=True` in a timm ViT training step.

Models a ViT training step (timm vit_tiny_patch16_224 at 64x64, pretrained=False) that guards
against exploding gradients: `torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True)` tests
the total norm for NaN/inf with a Python `if` on a GPU tensor (a host read inside
torch/nn/utils/clip_grad.py). SGD with momentum keeps no host-side state, so the clipping call is
the only hazard.
Expected: CG101 (sync: host reads a GPU value) at the clip_grad_norm_ line. With the default
error_if_nonfinite=False the same step is capturable.
"""

import timm
import torch
import torch.nn.functional as F

BATCH, RES, CLASSES = 8, 64, 10


def setup(device):
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=RES, num_classes=CLASSES)
    model = model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.randn(BATCH, 3, RES, RES, generator=g).to(device),
            "labels": torch.randint(0, CLASSES, (BATCH,), generator=g).to(device)}


def step(model, opt, images, labels):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)  # expect: CG101
    opt.step()
    return loss.detach()
