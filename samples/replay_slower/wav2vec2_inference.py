"""wav2vec2 inference (transformers Wav2Vec2Model, random weights, built offline): a line that runs slower in
replay than eager. Its positional convolution (a grouped Conv1d, 128 taps, 16 groups, weight-normed) is a cuDNN
convolution: on an H100 (torch 2.11) replay ran another kernel for it than eager did and took 199 µs against
85 µs eager. `cgtool capture` lists the line under "lines slower in replay than eager" with the kernels each side
ran (docs/node-lines.md). Expected: capture succeeds and replay matches eager; the speedup is smaller than it
would be without that line.
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
