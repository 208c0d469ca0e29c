"""Greedy decode with a transformers StaticCache, one token per step: the most common CUDA-graph use in LLM inference.

setup() prefills a 16-token prompt into a StaticCache of MAX_LEN positions (a tiny random-init Llama); each step
feeds the last greedy token (held in setup's state, updated in place), with `cache_position` as an input, and
writes the next greedy token back. The cache is updated in place: its keys and values at a fixed address, and its
write position (`cumulative_length`, a device counter inside each cache layer) advanced by one per call.

So the step captures and replays, but it cannot be called without end: every call, eager or replayed, moves the
counter, and once it passes MAX_LEN the cache's index_copy_ writes out of range (on the GPU a device-side assert).
`cgtool capture` compares K consecutive steps from identical state (--check-steps) and times it in blocks of at
most K calls, each from the checked state (docs/script-contract.md, "Steps that advance a counter").
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

PROMPT, MAX_LEN, VOCAB = 16, 128, 1024


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         attn_implementation="sdpa")
    model = LlamaForCausalLM(config).to(device).eval()
    cache = StaticCache(config=config, max_cache_len=MAX_LEN)
    prompt = torch.randint(0, VOCAB, (1, PROMPT), generator=torch.Generator().manual_seed(123)).to(device)
    with torch.no_grad():
        logits = model(input_ids=prompt, past_key_values=cache, use_cache=True,
                       cache_position=torch.arange(PROMPT, device=device)).logits
    return {"model": model, "cache": cache, "token": logits[:, -1:].argmax(-1)}


def inputs(i, device):
    return {"cache_position": torch.tensor([PROMPT + i], device=device)}


@torch.no_grad()
def step(model, cache, token, cache_position):
    logits = model(input_ids=token, past_key_values=cache, cache_position=cache_position, use_cache=True).logits
    token.copy_(logits[:, -1:].argmax(-1))  # the next step's input: greedy decode
    return logits[:, -1]
