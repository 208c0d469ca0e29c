"""Hazard (issue 20): a torch_geometric graph-network step, a GCN layer then global_mean_pool without a size.

Models graph classification over a mini-batch of graphs that differ each iteration (random edges, self loops
among them). Two syncs, one per line: GCNConv's normalization calls add_remaining_self_loops, whose boolean-mask
selection of the non-loop edges sizes its output from the data (CG102; the count of edges also changes between
iterations, CG301); global_mean_pool without `size` reads `int(batch.max()) + 1` on the host (CG101). A GPU capture
fails at the first; one run names both (the CPU analysis of the whole step adds the second). Fix: fixed graphs
with `GCNConv(..., cached=True)` or precomputed normalization, and `global_mean_pool(h, batch, size=GRAPHS)`
(tests/realworld/clean/pyg_gcn_cached_pool.py).
"""

import torch
from torch_geometric.nn import GCNConv, global_mean_pool

GRAPHS, NODES, EDGES = 4, 10, 30


def setup(device):
    torch.manual_seed(0)
    return {"conv": GCNConv(16, 32).to(device), "head": torch.nn.Linear(32, 4).to(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    x = torch.randn(GRAPHS * NODES, 16, generator=g)
    edge_index = torch.randint(0, GRAPHS * NODES, (2, GRAPHS * EDGES), generator=g)
    batch = torch.arange(GRAPHS).repeat_interleave(NODES)
    return {"x": x.to(device), "edge_index": edge_index.to(device), "batch": batch.to(device)}


def step(conv, head, x, edge_index, batch):
    h = conv(x, edge_index).relu()  # expect: CG102, CG301
    g = global_mean_pool(h, batch)  # expect: CG101
    return head(g)
