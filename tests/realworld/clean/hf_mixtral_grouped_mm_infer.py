"""Clean (probe): transformers MixtralForCausalLM with the default "grouped_mm" experts implementation.

Models a mixture-of-experts decoder (4 experts, top-2 routing) where transformers sorts the routed
tokens by expert, counts them with `torch.histc` (chosen upstream "to avoid cuda graph issues") and
runs one grouped matmul over fixed-size buffers: every shape is fixed and nothing is read on the
host. The counterpart of hazards/hf_mixtral_moe_eager.py. bfloat16 on CUDA (grouped_mm's CUDA
kernel wants bf16), float32 on the CPU.
Expected: no error findings; capture succeeds and replay matches eager (bf16 tolerances).
"""

import torch
from transformers import MixtralConfig, MixtralForCausalLM

BATCH, SEQ, VOCAB = 2, 32, 1024


def setup(device):
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                           num_experts_per_tok=2, max_position_embeddings=256, attn_implementation="sdpa",
                           experts_implementation="grouped_mm")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = MixtralForCausalLM(config).to(device=device, dtype=dtype).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"input_ids": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g).to(device)}


@torch.no_grad()
def step(model, input_ids):
    return model(input_ids=input_ids, use_cache=False).logits
