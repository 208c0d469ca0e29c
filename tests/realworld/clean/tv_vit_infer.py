"""Clean: torchvision VisionTransformer (the class behind vit_b_16), small config, inference.

Models ViT classification with a tiny config (64x64 images, 16x16 patches, 2 layers, width 128),
random weights, eval mode.
Expected: no error findings; capture succeeds and replay matches eager.
"""

import torch
from torchvision.models.vision_transformer import VisionTransformer

BATCH, RES = 4, 64


def setup(device):
    torch.manual_seed(0)
    model = VisionTransformer(image_size=RES, patch_size=16, num_layers=2, num_heads=4, hidden_dim=128,
                              mlp_dim=256, num_classes=10).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.randn(BATCH, 3, RES, RES, generator=g).to(device)}


@torch.no_grad()
def step(model, images):
    return model(images)
