"""Module map (`cgtool capture --modules 2`), training: a tiny transformers Llama (built from a config, random
weights, nothing downloaded) on a right-padded batch with its `attention_mask`, AdamW, the loss logged with
`.item()`, and a guard that stops training when the hidden states entering the decoder layers are not finite (a
forward pre-hook on the first layer that asks the GPU: a sync inside `LlamaModel.forward` on every step).

So neither `model` nor `model.model` can be graphed whole; their parts can. The decoder layers are called with
keyword arguments (`attention_mask=`, `position_embeddings=`, `position_ids=`, ...), which
torch.cuda.make_graphed_callables does not take: the map graphs them through a wrapper that takes their tensors
positionally (the padding mask is one) and fixes the rest at capture. The embedding, the final norm, the rotary
embedding and lm_head graph as they are. The guard still runs, eagerly, before the first layer's graph.
Needs transformers.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

BATCH, SEQ, VOCAB, PAD = 4, 64, 512, 0


def finite_guard(layer, args):
    if not torch.isfinite(args[0]).all():  # expect: CG101
        raise FloatingPointError("non-finite hidden states entering the decoder layers")


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, use_cache=False,
                         pad_token_id=PAD, attn_implementation="sdpa")
    model = LlamaForCausalLM(config).to(device).train()
    model.model.layers[0].register_forward_pre_hook(finite_guard)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=device.type == "cuda")
    return {"model": model, "opt": opt, "log": []}


def inputs(i, device):
    """Right-padded rows of different lengths (the tokens after each row's length are padding)."""
    g = torch.Generator().manual_seed(i)
    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
    lengths = torch.randint(SEQ // 2, SEQ + 1, (BATCH,), generator=g)
    mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
    ids = ids.masked_fill(mask == 0, PAD)
    labels = ids.masked_fill(mask == 0, -100)
    return {"ids": ids.to(device), "mask": mask.to(device), "labels": labels.to(device)}


def step(model, opt, log, ids, mask, labels):
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    loss.backward()
    opt.step()
    log.append(loss.item())  # expect: CG101
    return loss.detach()
