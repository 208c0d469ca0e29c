"""Clean: transformers BertModel encoder (inference) with a padding attention mask.

Models a batched sentence-embedding pass: every row is padded to a fixed length, the attention mask
marks the real tokens (each iteration has padding), and the step returns the masked mean of the
last hidden state.
Expected: no error findings on a GPU. Note for the CPU analysis: transformers'
`_ignore_bidirectional_mask_sdpa` calls `padding_mask.all()` (a host read) unless
`torch.cuda.is_current_stream_capturing()` is true, so eager/warmup iterations sync once per call
but the captured iteration does not; the real capture succeeds.
"""

import torch
from transformers import BertConfig, BertModel

BATCH, SEQ, VOCAB = 4, 48, 1000


def setup(device):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=256, max_position_embeddings=128, attn_implementation="sdpa")
    model = BertModel(config, add_pooling_layer=False).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
    lengths = torch.randint(SEQ // 2, SEQ, (BATCH,), generator=g)  # always < SEQ: every row has padding
    mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
    return {"input_ids": (ids * mask).to(device), "attention_mask": mask.to(device)}


@torch.no_grad()
def step(model, input_ids, attention_mask):
    hidden = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    m = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1)
