"""Debug hooks: a compiled activation that logs a statistic of what it sees."""

import torch


def _logged_activation(x: torch.Tensor) -> torch.Tensor:
    y = torch.tanh(x) * 2.0
    print("acme.debug: activation mean", y.mean())  # expect: CG705
    return y + 1.0


logged_activation = torch.compile(_logged_activation, mode="reduce-overhead")
