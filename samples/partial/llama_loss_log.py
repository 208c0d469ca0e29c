"""Partial capture, real library: a tiny transformers Llama (random weights, nothing downloaded) trained one
step, logging the loss with `.item()` in the middle of the step, as training loops do.

Whole-step capture fails at the `.item()` line; piecewise capture graphs the forward, backward and optimizer.
Needs transformers.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, use_cache=False)
    model = LlamaForCausalLM(config).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=device.type == "cuda")
    return {"model": model, "opt": opt, "log": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"ids": torch.randint(0, 512, (2, 64), generator=g).to(device)}


def step(model, opt, log, ids):
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    log.append(loss.item())  # expect: CG101
    opt.step()
    return loss.detach()
