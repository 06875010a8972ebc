"""2x2 max pooling with stride 2: ``nn.MaxPool2d(2)``, its evaluation faster on a CPU.

PyTorch's CPU max-pooling kernel is slow on the papers' small CNNs: at evaluation it took 39 ms
of a 1,000-image batch's 90 through ``chfl_cnn`` (one thread). Without gradients (evaluation)
the maxima are taken here as two elementwise maxima over the four strided views of each window
(about 3 ms for that batch; a whole test-set evaluation of chfl_cnn about 1.65x faster). A
maximum is exact, so the values are the same bits (where a window holds both -0.0 and +0.0 the
vectorized maximum may return the other zero: equal values).

With gradients (training) and off the CPU it is max_pool2d itself. A version with its own
gradient (the same bits, through aten's max-pooling backward) made training slower here, not
faster: its Python holds the interpreter lock that the trainer's two worker threads share
(hfl_pwp/paper-hier-fedavg, 12 rounds: training 40.3-40.6 s with max_pool2d, 44.5-48.2 s with
it); on an H100 under vmap it was slower too (10.0 against 6.6 ms a step).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def window_maxima(x: torch.Tensor) -> torch.Tensor:
    """Each 2x2 window's maximum of ``x`` (..., H, W), stride 2; an odd last row or column is
    left out, as max_pool2d leaves it."""
    height, width = x.shape[-2] // 2 * 2, x.shape[-1] // 2 * 2
    x = x[..., :height, :width]
    upper = torch.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2])
    lower = torch.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2])
    return torch.maximum(upper, lower)


class MaxPool2x2(nn.Module):
    """``nn.MaxPool2d(2)`` (see the module docstring); no parameters, no state."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type == "cpu" and not torch.is_grad_enabled():
            return window_maxima(x)
        return F.max_pool2d(x, 2)
