"""The SGD update every training path shares (one client's tensors, or stacked over clients)."""

from __future__ import annotations

import torch


def sgd_step_(theta: list[torch.Tensor], grads: list[torch.Tensor], lr, *,
              momentum: float = 0.0, buffers: list[torch.Tensor] | None = None,
              weight_decay: float = 0.0, prox_mu: float = 0.0,
              anchor: list[torch.Tensor] | None = None,
              correction: list[torch.Tensor] | None = None) -> None:
    """One SGD step, in place, on parameter tensors (one client's, or stacked over clients).

    For each tensor:
        d = grad + weight_decay * theta + prox_mu * (theta - anchor) + correction
        buffer = momentum * buffer + d and d = buffer   (with momentum; buffers start at zero)
        theta -= lr * d

    ``prox_mu`` is FedProx's proximal term around ``anchor`` (the global model); ``correction``
    is SCAFFOLD's control-variate term c - c_i. ``lr`` is a number, or a tensor of per-client
    rates shaped to broadcast against stacked parameters. Updating views of one flat vector in
    place updates the vector.
    """
    # Each term is formed in one new tensor and the rest added into it in place: the same
    # floats as the formula's left-to-right sum (a sum of two is commutative, a scalar product
    # too), without a new tensor per operation (FedProx's step on the dense path: 3x plain).
    for i, (t, g) in enumerate(zip(theta, grads, strict=True)):
        d = g
        if weight_decay:
            d = torch.mul(t, weight_decay).add_(d)
        if prox_mu:
            d = torch.sub(t, anchor[i]).mul_(prox_mu).add_(d)
        if correction is not None:
            d = d.add_(correction[i]) if d is not g else d + correction[i]
        if momentum:
            buffers[i].mul_(momentum).add_(d)
            d = buffers[i]
        if isinstance(lr, float | int):
            t.sub_(d, alpha=lr)
        else:
            t.addcmul_(d, lr.view(-1, *[1] * (t.dim() - 1)), value=-1.0)
