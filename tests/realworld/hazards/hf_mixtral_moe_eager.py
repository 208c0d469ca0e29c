"""Hazard: transformers Mixtral sparse-MoE forward with the "eager" experts implementation.

Models a mixture-of-experts decoder (MixtralForCausalLM, 4 experts, top-2 routing) run with
`experts_implementation="eager"`: MixtralExperts.forward finds the experts that got tokens with
`.nonzero()`, loops over them in Python and gathers each expert's tokens with `torch.where(mask)`.
Expected: CG102 (sync: output size depends on the data) at the model call; the per-expert token
counts (and so the shapes) also change with the data. The default "grouped_mm" implementation
(see clean/hf_mixtral_grouped_mm_infer.py) keeps every shape fixed.
"""

import torch
from transformers import MixtralConfig, MixtralForCausalLM

BATCH, SEQ, VOCAB = 2, 32, 1024


def setup(device):
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                           num_experts_per_tok=2, max_position_embeddings=256, attn_implementation="sdpa",
                           experts_implementation="eager")
    model = MixtralForCausalLM(config).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"input_ids": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g).to(device)}


@torch.no_grad()
def step(model, input_ids):
    return model(input_ids=input_ids, use_cache=False).logits  # expect: CG102
