"""Module map (`cgtool capture --modules 2`), training: a tiny transformers Llama (built from a config, random
weights, nothing downloaded), AdamW, the loss logged with `.item()` (so the whole step cannot be captured).

The decoder layers are called with keyword arguments (`attention_mask=`, `position_embeddings=`, ...), which
torch.cuda.make_graphed_callables does not take: the map graphs them through a wrapper that takes their tensors
positionally and fixes the rest at capture. Needs transformers.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, use_cache=False)
    model = LlamaForCausalLM(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=device.type == "cuda")
    return {"model": model, "opt": opt, "log": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"ids": torch.randint(0, 512, (4, 64), generator=g).to(device)}


def step(model, opt, log, ids):
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    log.append(loss.item())  # expect: CG101
    return loss.detach()
