"""Clean: transformers ViTForImageClassification training step (labels -> loss inside the model).

Models fine-tuning a tiny Hugging Face ViT (32x32 images, 8x8 patches, 2 layers): pixel_values and
integer labels, the model computes cross-entropy, capturable AdamW on CUDA, dropout at its defaults.
Expected: no error findings; capture succeeds and replay matches eager from the same state.
"""

import torch
from transformers import ViTConfig, ViTForImageClassification

BATCH, RES, CLASSES = 8, 32, 10


def setup(device):
    torch.manual_seed(0)
    config = ViTConfig(image_size=RES, patch_size=8, num_channels=3, hidden_size=128, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=256, num_labels=CLASSES,
                       attn_implementation="sdpa")
    model = ViTForImageClassification(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=(device.type == "cuda"))
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"pixel_values": torch.randn(BATCH, 3, RES, RES, generator=g).to(device),
            "labels": torch.randint(0, CLASSES, (BATCH,), generator=g).to(device)}


def step(model, opt, pixel_values, labels):
    opt.zero_grad(set_to_none=False)
    loss = model(pixel_values=pixel_values, labels=labels).loss
    loss.backward()
    opt.step()
    return loss.detach()
