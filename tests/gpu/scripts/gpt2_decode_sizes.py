"""A GPT-2 decode step sized by `size` (the batch): one new token per sequence against a past of PAST tokens, the
past given as static inputs and wrapped in a fresh DynamicCache each call (so no call changes any state). The second
model of issue 36's size-plan memory check (tests/gpu/test_memory_gpu.py). Random weights, built offline."""

import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

PAST, VOCAB, LAYERS, HEADS, DIM = 64, 4096, 4, 8, 512


def setup(device):
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=VOCAB, n_positions=256, n_embd=DIM, n_layer=LAYERS, n_head=HEADS,
                        bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")
    return {"model": GPT2LMHeadModel(config).to(device).eval()}


def inputs(i, device, size=8):
    g = torch.Generator().manual_seed(i)
    return {"input_ids": torch.randint(0, VOCAB, (size, 1), generator=g).to(device),
            "past": torch.randn(LAYERS, 2, size, HEADS, PAST, DIM // HEADS, generator=g).to(device)}


@torch.no_grad()
def step(model, input_ids, past):
    cache = DynamicCache()
    for layer in range(LAYERS):
        cache.update(past[layer, 0], past[layer, 1], layer)
    position = torch.full_like(input_ids, PAST)
    return model(input_ids=input_ids, past_key_values=cache, position_ids=position, use_cache=True).logits
