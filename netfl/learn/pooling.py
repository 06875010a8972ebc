"""2x2 max pooling with stride 2: ``nn.MaxPool2d(2)``'s values and gradients, faster on a CPU.

PyTorch's CPU max-pooling kernel is slow on the papers' small CNNs (2 cores, one thread): for
``chfl_cnn`` on a batch of 32 it took a quarter of a training step's time under torch's profiler
(0.76 ms a call), and at evaluation 39 ms of a 1,000-image batch's 90. Here the forward pass is
two elementwise maxima over the four strided views of each window (about 3 ms for that batch): a
maximum is exact, so the values are the same. The gradient goes where max_pool2d sends it, to
the first maximum of each window in row-major order (its kernel keeps the first of equal values:
the background of an image gives windows of four equal values), through aten's own max-pooling
backward, so every gradient is the same bits.

Deviations, for values that do not occur in a run that has not diverged: where a window holds
both -0.0 and +0.0, the vectorized maximum may return the other zero (equal values); where it
holds a NaN, the output is NaN as in max_pool2d, but the window's gradient is dropped rather
than sent to its last NaN.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _windows(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The four members of each 2x2 window of ``x`` (..., H, W), in row-major order; an odd
    last row or column is left out, as max_pool2d leaves it."""
    height, width = x.shape[-2] // 2 * 2, x.shape[-1] // 2 * 2
    x = x[..., :height, :width]
    return x[..., 0::2, 0::2], x[..., 0::2, 1::2], x[..., 1::2, 0::2], x[..., 1::2, 1::2]


def _maximum(x: torch.Tensor) -> torch.Tensor:
    """Each window's maximum (no gradient kept)."""
    a, b, c, d = _windows(x)
    return torch.maximum(torch.maximum(a, b), torch.maximum(c, d))


class _MaxPool2x2(torch.autograd.Function):
    """The maxima and, for the gradient, the flat index in each (H, W) plane of the member
    that max_pool2d would pick: the first maximum in row-major order (a later member only where
    it is strictly greater)."""

    generate_vmap_rule = True  # made of torch operations only: vmap (the GPU trainer) works

    @staticmethod
    def forward(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b, c, d = _windows(x)
        upper, lower = torch.maximum(a, b), torch.maximum(c, d)
        width = x.shape[-1]
        rows = torch.arange(0, upper.shape[-2] * 2, 2, device=x.device) * width
        corner = rows[:, None] + torch.arange(0, upper.shape[-1] * 2, 2, device=x.device)
        offset = torch.where(lower > upper, (d > c).long() + width, (b > a).long())
        return torch.maximum(upper, lower), corner + offset

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        (x,), (_, indices) = inputs, output
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(x, indices)

    @staticmethod
    def backward(ctx, grad: torch.Tensor, _grad_indices) -> torch.Tensor:
        x, indices = ctx.saved_tensors
        return torch.ops.aten.max_pool2d_with_indices_backward(
            grad, x, [2, 2], [2, 2], [0, 0], [1, 1], False, indices)


class MaxPool2x2(nn.Module):
    """``nn.MaxPool2d(2)`` (see the module docstring); no parameters, no state. Without
    gradients (evaluation) only the maxima are computed. Off the CPU it is max_pool2d itself:
    on an H100 under vmap (the GPU trainer's path) this version was slower (10.0 ms against
    6.6 ms per step of per-sample gradients of chfl_cnn, 8 x 32 samples)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cpu":
            return F.max_pool2d(x, 2)
        if not torch.is_grad_enabled():
            return _maximum(x)
        return _MaxPool2x2.apply(x)[0]
