"""Clean: transformers GPT2LMHeadModel training step (forward with labels, backward, AdamW).

Models language-model pretraining on fixed-length token blocks. Dropout stays at GPT-2's default
(0.1): it draws from the default CUDA generator, which graph replay advances. The optimizer is
capturable on CUDA (`capturable=(device.type == "cuda")`; on the CPU capturable is not supported).
Gradients are zeroed in place (set_to_none=False) so their buffers stay fixed.
Expected: no error findings; capture succeeds and replay matches eager from the same state.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

BATCH, SEQ, VOCAB = 4, 64, 1024


def setup(device):
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=128, n_layer=2, n_head=4,
                        attn_implementation="sdpa")
    model = GPT2LMHeadModel(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01,
                            capturable=(device.type == "cuda"))
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"input_ids": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g).to(device)}


def step(model, opt, input_ids):
    opt.zero_grad(set_to_none=False)
    loss = model(input_ids=input_ids, labels=input_ids, use_cache=False).loss
    loss.backward()
    opt.step()
    return loss.detach()
