"""A model whose parameters are views of one flat vector: loading a client's parameters is one
copy, and updating views of a vector in place updates the vector."""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F


class FlatModel:
    """``model``'s parameters re-bound as views of ``flat`` (their current values kept).

    layout: (name, shape, offset, size) of each parameter tensor inside the flat vector.
    """

    def __init__(self, model: nn.Module):
        self.model = model
        self.params = list(model.parameters())
        self.flat = torch.cat([p.detach().reshape(-1) for p in self.params]).clone()
        self.layout: list[tuple[str, torch.Size, int, int]] = []
        offset = 0
        for name, p in model.named_parameters():
            p.data = self.flat[offset:offset + p.numel()].view_as(p)
            self.layout.append((name, p.shape, offset, p.numel()))
            offset += p.numel()

    def replica(self) -> FlatModel:
        """An independent copy (own parameters and buffer), for another worker thread."""
        return FlatModel(copy.deepcopy(self.model))

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Views of a flat vector (P,) or stacked vectors (B, P), one per parameter tensor."""
        lead = flat.shape[:-1]
        return [flat[..., start:start + n].view(*lead, *shape)
                for _, shape, start, n in self.layout]

    def grads_at(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                 sample_weights: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Per-tensor gradients at the flat parameters ``theta`` of the mean cross-entropy on
        (x, y), or of its per-sample weighted sum where ``sample_weights`` is given."""
        with torch.no_grad():
            self.flat.copy_(theta)
        logits = self.model(x)
        if sample_weights is None:
            loss = F.cross_entropy(logits, y)
        else:
            loss = (F.cross_entropy(logits, y, reduction="none") * sample_weights).sum()
        return list(torch.autograd.grad(loss, self.params))


def flatten(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])
