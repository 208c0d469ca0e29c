"""Hazard: torchvision Faster R-CNN inference (detection post-processing syncs inside torchvision).

Models a detector (fasterrcnn_mobilenet_v3_large_320_fpn, weights=None, weights_backbone=None,
eval mode) on a fixed batch of 320x320 images. Inside torchvision the RPN and the box head filter
proposals with `remove_small_boxes` (`torch.where(keep)[0]`, a nonzero), score thresholds
(boolean indexing) and `batched_nms`; each returns a data-dependent number of boxes.
What breaks capture first (plain torch.cuda.graph on an H100): torchvision's GeneralizedRCNNTransform
normalizes with `torch.as_tensor(image_mean, device=...)` (transform.py:167), a pageable host-to-device copy
inside capture: CG402 at the model call. The data-dependent post-processing (CG102) follows it, and the
CPU analysis, whose emulated capture does not stop there, reports it too.
"""

import torch
import torchvision

BATCH, RES = 2, 320


def setup(device):
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=5).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"images": torch.rand(BATCH, 3, RES, RES, generator=g).to(device)}


@torch.no_grad()
def step(model, images):
    detections = model(list(images))  # expect: CG402
    return [d["boxes"] for d in detections], [d["scores"] for d in detections]
