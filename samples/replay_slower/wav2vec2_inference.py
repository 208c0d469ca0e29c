"""wav2vec2 inference (transformers Wav2Vec2Model, random weights, built offline): a line that runs slower in
replay than eager. While a CUDA stream captures, transformers' masking_utils takes another path (`is_tracing()`
holds when `torch.cuda.is_current_stream_capturing()`): it builds an explicit attention mask instead of letting
SDPA run unmasked, and SDPA then runs its math path (sgemm, softmax) instead of the memory-efficient kernel. On an
H200 (torch 2.11, transformers 5.17, plain PyTorch): eager 2 x 38.7 µs of fmha_cutlassF, replay 124 µs of mask and
math-path kernels. `cgtool capture` lists the attention line under "lines slower in replay than eager" with the
kernels each side ran (docs/node-lines.md). (On an H100 the positional convolution was reported slower too, 199 µs
against 85 µs; on the H200 the convolutions run the same kernels both ways.) Expected: capture succeeds and replay
matches eager; the speedup is small (the step is GPU-bound).
"""

import torch
from transformers import Wav2Vec2Config, Wav2Vec2Model

BATCH, SAMPLES = 4, 64000  # 4 clips of 4 s at 16 kHz: 199 frames


def setup(device):
    torch.manual_seed(0)
    config = Wav2Vec2Config(num_hidden_layers=2, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                            num_conv_pos_embeddings=128, num_conv_pos_embedding_groups=16)
    return {"model": Wav2Vec2Model(config).to(device).eval()}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"audio": torch.randn(BATCH, SAMPLES, generator=g).to(device)}


@torch.no_grad()
def step(model, audio):
    return model(audio).last_hidden_state
