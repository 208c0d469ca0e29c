"""A Llama decoder scoring a batch of sequences (prefill, no KV cache), sized by `size` (the batch): the
decoder model of issue 21's size sweep and plan (tests/gpu/test_memory_gpu.py). Random weights, built offline."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

SEQ, VOCAB = 32, 2048


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=256,
                         attn_implementation="sdpa")
    return {"model": LlamaForCausalLM(config).to(device).eval()}


def inputs(i, device, size=8):
    g = torch.Generator().manual_seed(i)
    return {"input_ids": torch.randint(0, VOCAB, (size, SEQ), generator=g).to(device)}


@torch.no_grad()
def step(model, input_ids):
    return model(input_ids=input_ids, use_cache=False).logits
