"""Clean: transformers LlamaForCausalLM prefill (inference), tiny random-weight config, no KV cache.

Models a batched scoring/prefill pass of a Llama decoder: fixed batch and sequence length, SDPA
attention, no padding mask (so transformers uses SDPA's is_causal path), use_cache=False.
Expected: no error findings; capture succeeds and replay matches eager.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

BATCH, SEQ, VOCAB = 2, 64, 1024


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         attn_implementation="sdpa")
    model = LlamaForCausalLM(config).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"input_ids": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g).to(device)}


@torch.no_grad()
def step(model, input_ids):
    return model(input_ids=input_ids, use_cache=False).logits
