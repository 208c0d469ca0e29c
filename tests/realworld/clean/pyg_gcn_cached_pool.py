"""Clean: a torch_geometric GCN over a fixed graph (a citation-network style node set), pooled per group.

The graph is made once in setup(); `GCNConv(..., cached=True)` computes its normalization (with its syncs) on the
first call, in the warmup, and reuses it after; `global_mean_pool(h, batch, size=GROUPS)` is told the number of
groups, so nothing reads a device value on the host. Node features change every iteration.
Expected: no error findings; capture succeeds and replay matches eager.
"""

import torch
from torch_geometric.nn import GCNConv, global_mean_pool

GROUPS, NODES, EDGES = 4, 40, 160


def setup(device):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1234)
    edge_index = torch.randint(0, NODES, (2, EDGES), generator=g).to(device)
    batch = torch.arange(GROUPS).repeat_interleave(NODES // GROUPS).to(device)
    return {"conv": GCNConv(16, 32, cached=True).to(device), "head": torch.nn.Linear(32, 4).to(device),
            "edge_index": edge_index, "batch": batch}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(NODES, 16, generator=g).to(device)}


def step(conv, head, edge_index, batch, x):
    h = conv(x, edge_index).relu()
    return head(global_mean_pool(h, batch, size=GROUPS))
