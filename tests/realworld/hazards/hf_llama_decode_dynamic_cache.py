"""Hazard: token-by-token decode of a transformers LlamaForCausalLM with a growing DynamicCache.

Models the inner loop of greedy generation: setup() prefills a 16-token prompt into a
transformers DynamicCache; each step feeds one new token and appends its keys/values to the cache
(torch.cat), so the attention's key/value length grows by one every iteration.
Expected: CG301 (dynamic-shape) at the model call: the cache tensors and the attention shapes
change between iterations; a graph replays the captured length (and the Python cache object keeps
pointing at tensors produced during capture). The fix is a StaticCache with a fixed max length and
a device-tensor cache_position. CG406 (rebound-state) at the same line: the cache's layers are rebound to
the new torch.cat tensors and read again in the next step. cgtool may also report CG402 there (the
cache_position arange gets a different Python start every iteration).
"""

import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

BATCH, PROMPT, VOCAB = 1, 16, 1024


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         attn_implementation="sdpa")
    model = LlamaForCausalLM(config).to(device).eval()
    cache = DynamicCache(config=config)
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT), generator=torch.Generator().manual_seed(123)).to(device)
    with torch.no_grad():
        model(input_ids=prompt, past_key_values=cache, use_cache=True)
    return {"model": model, "cache": cache}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"token": torch.randint(0, VOCAB, (BATCH, 1), generator=g).to(device)}


@torch.no_grad()
def step(model, cache, token):
    out = model(input_ids=token, past_key_values=cache, use_cache=True)  # expect: CG301 CG406
    return out.logits[:, -1]
