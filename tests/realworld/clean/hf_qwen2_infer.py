"""Clean: transformers Qwen2ForCausalLM prefill (inference) returning last-position logits.

Models the prefill of a Qwen2 decoder (GQA, RoPE, qkv bias): fixed batch and length, no padding
mask, use_cache=False, tiny random-weight config. Returns the next-token logits of the last position
and their greedy argmax (a device tensor, not read on the host).
Expected: no error findings; capture succeeds and replay matches eager.
"""

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

BATCH, SEQ, VOCAB = 2, 64, 1024


def setup(device):
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         attn_implementation="sdpa")
    model = Qwen2ForCausalLM(config).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"input_ids": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g).to(device)}


@torch.no_grad()
def step(model, input_ids):
    logits = model(input_ids=input_ids, use_cache=False, logits_to_keep=1).logits[:, -1]
    return logits, logits.argmax(-1)
