"""Hazard (found on the H100, not planted): a transformers ViTForImageClassification training step whose replay
differs from eager in one parameter.

Models fine-tuning a tiny Hugging Face ViT (32x32 images, 8x8 patches, 2 layers): pixel_values and integer
labels, the model computes cross-entropy, capturable AdamW on CUDA, dropout at its defaults. It was meant as a
clean model, but plain torch.cuda.graph (tests/realworld/truth.py) says replay differs from eager after one
step: `attention.k_proj.bias` by 2e-5, with two eager runs from the same state agreeing exactly. The gradient of a
key bias is zero in exact arithmetic (softmax ignores a constant added to every key), so what it gets is rounding
noise, which depends on the kernels cuBLAS picks (they differ under capture); AdamW divides by the root of that
noise's square and turns it into an update of learning-rate size. cgtool reports CG503 on the step, as truth does.
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


def step(model, opt, pixel_values, labels):  # expect: CG503
    opt.zero_grad(set_to_none=False)
    loss = model(pixel_values=pixel_values, labels=labels).loss
    loss.backward()
    opt.step()
    return loss.detach()
