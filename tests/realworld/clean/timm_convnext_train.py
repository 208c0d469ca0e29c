"""Clean: timm convnext_atto (create_model, pretrained=False) training step with capturable AdamW.

Models fine-tuning a small ConvNeXt classifier: LayerNorm2d, depthwise 7x7 convs, GELU MLPs,
cross-entropy, AdamW (capturable on CUDA). Gradients are reset with set_to_none=True inside the
step, as in PyTorch's whole-network capture example.
Expected: no error findings; capture succeeds and replay matches eager from the same state.
"""

import timm
import torch
import torch.nn.functional as F

BATCH, RES, CLASSES = 4, 64, 10


def setup(device):
    torch.manual_seed(0)
    model = timm.create_model("convnext_atto", pretrained=False, num_classes=CLASSES).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, capturable=(device.type == "cuda"))
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.randn(BATCH, 3, RES, RES, generator=g).to(device),
            "labels": torch.randint(0, CLASSES, (BATCH,), generator=g).to(device)}


def step(model, opt, images, labels):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()
    return loss.detach()
