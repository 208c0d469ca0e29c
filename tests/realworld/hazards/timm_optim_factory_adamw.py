"""Hazard: timm's optimizer factory builds an AdamW that is not capturable.

Models a timm fine-tuning step (convnext_atto, create_model(pretrained=False)) whose optimizer comes
from `timm.optim.create_optimizer_v2(model, "adamw", ...)`: the factory returns torch's AdamW with
the default capturable=False, so the step count lives on the host and the bias correction is
computed in Python.
Expected: CG404 (optimizer is not capturable) at `opt.step()`. PyTorch refuses the capture
("Attempting CUDA graph capture of step() for an instance of AdamW but param_groups' capturable is
False"). Fix: pass capturable=True to the factory (it forwards extra kwargs) or set
`opt.param_groups[i]["capturable"] = True` before the first step.
"""

import timm
import torch
import torch.nn.functional as F
from timm.optim import create_optimizer_v2

BATCH, RES, CLASSES = 4, 64, 10


def setup(device):
    torch.manual_seed(0)
    model = timm.create_model("convnext_atto", pretrained=False, num_classes=CLASSES).to(device).train()
    opt = create_optimizer_v2(model, "adamw", lr=1e-3, weight_decay=0.05)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.randn(BATCH, 3, RES, RES, generator=g).to(device),
            "labels": torch.randint(0, CLASSES, (BATCH,), generator=g).to(device)}


def step(model, opt, images, labels):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()  # expect: CG404
    return loss.detach()
