"""Clean: transformers LlamaForCausalLM training step with the loss computed through `labels=`
(forward, backward, AdamW with capturable=True on CUDA), tiny random-weight config.

Models causal-LM fine-tuning on fixed-length blocks: `model(input_ids=ids, labels=ids)` computes the
shifted cross-entropy inside transformers (ForCausalLMLoss). Gradients are zeroed in place
(set_to_none=False) so their buffers stay fixed.
Expected: no error findings; capture succeeds and replay matches eager from the same state. The CPU
analysis must not call the loss's constants a per-iteration host copy (issue 20: the GPU refutes it).
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

BATCH, SEQ, VOCAB = 2, 64, 1024


def setup(device):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         attn_implementation="sdpa")
    model = LlamaForCausalLM(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01,
                            capturable=(device.type == "cuda"))
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"ids": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g).to(device)}


def step(model, opt, ids):
    opt.zero_grad(set_to_none=False)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    return loss.detach()
