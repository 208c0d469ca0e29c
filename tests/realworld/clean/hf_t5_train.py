"""Clean: transformers T5ForConditionalGeneration training step (encoder-decoder, teacher forcing).

Models seq2seq training with a tiny T5 config: source ids with a padding mask, target labels (the
decoder inputs are built by T5's own shift-right), cross-entropy inside the model, capturable Adam
on CUDA. Dropout is 0 here.
Expected: no error findings on a GPU (see hf_bert_padded_infer.py: the padding-mask `.all()` check
in transformers is skipped during capture, so the CPU analysis may report a host read at the
model call that the real capture does not have).
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

BATCH, SRC, TGT, VOCAB = 4, 32, 16, 512


def setup(device):
    torch.manual_seed(0)
    config = T5Config(vocab_size=VOCAB, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_decoder_layers=2,
                      num_heads=4, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    model = T5ForConditionalGeneration(config).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=(device.type == "cuda"))
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    src = torch.randint(1, VOCAB, (BATCH, SRC), generator=g)
    mask = torch.ones(BATCH, SRC, dtype=torch.long)
    mask[:, -4:] = 0  # every row ends with 4 padding tokens
    labels = torch.randint(1, VOCAB, (BATCH, TGT), generator=g)
    return {"input_ids": (src * mask).to(device), "attention_mask": mask.to(device), "labels": labels.to(device)}


def step(model, opt, input_ids, attention_mask, labels):
    opt.zero_grad(set_to_none=False)
    loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, use_cache=False).loss
    loss.backward()
    opt.step()
    return loss.detach()
