"""Plain SGD for many clients' copies of a dense ReLU network, by hand, a few clients at a time.

The stacked (vmap) path differentiates a stacked model with torch.func: every step writes a
gradient tensor of all B clients' parameters (B x P floats) and reads it back to update them, so
on a CPU a step streams several times B x P x 4 bytes through memory (bench_peers' W2: 100
clients of the 199k-parameter MLP, about 80 MB per pass), more than its arithmetic costs. A
per-client loop keeps one client's 0.8 MB in cache for all its steps, which is why a W2 round
on the stacked path only tied a plain loop.

Here the forward and backward passes of a ``Linear, ReLU, ..., Linear`` network are written
out with batched matrix products, each weight update fused into the product that makes its
gradient (``W.baddbmm_(g^T, a, alpha=-lr)``: no gradient tensor exists), and clients go
through in chunks small enough that a chunk's parameters stay in the last-level cache across
all its steps. Same maths as ``sgd_step_`` with plain SGD on the mean cross-entropy; the sums
run in another order, so results agree with the other paths within float rounding.
"""

from __future__ import annotations

import torch
from torch import nn

from netfl.learn.sgd import sgd_step_

CACHE_BYTES = 8 * 2**20  # per chunk (W2: 10 clients 138 ms; 2 clients 172, 50 clients 191)


def dense_layers(model: nn.Module) -> int | None:
    """The number of Linear layers of ``model`` where it is ``[Flatten,] Linear, ReLU, ...,
    Linear`` (biases on, nothing else), whose parameters come in the order weight, bias per
    layer; None for any other model."""
    if not isinstance(model, nn.Sequential):
        return None
    layers = list(model)
    if layers and isinstance(layers[0], nn.Flatten):
        layers = layers[1:]
    if len(layers) % 2 == 0:
        return None
    for i, layer in enumerate(layers):
        expected = nn.Linear if i % 2 == 0 else nn.ReLU
        if type(layer) is not expected or (expected is nn.Linear and layer.bias is None):
            return None
    return (len(layers) + 1) // 2


def chunk_size(params_per_client: int, bytes_per_param: int = 4) -> int:
    """Clients per chunk: as many as fit CACHE_BYTES, at least one."""
    return max(1, CACHE_BYTES // (params_per_client * bytes_per_param))


@torch.no_grad()
def dense_sgd_(tensors: list[torch.Tensor], xs, ys, lr, *, momentum: float = 0.0,
               weight_decay: float = 0.0, prox_mu: float = 0.0,
               anchor: list[torch.Tensor] | None = None,
               buffers: list[torch.Tensor] | None = None,
               correction: list[torch.Tensor] | None = None) -> None:
    """SGD steps, in place, for a chunk of clients of a dense ReLU network.

    tensors: per layer, the weight (C, out, in) and the bias (C, out) of C clients, each
        contiguous (updated in place);
    xs: per step, the inputs (k, b, in), flattened, of the first k clients (those that still
        train at that step: k never grows from one step to the next); ys: per step, their
        class labels (k, b). A (steps, C, b, in) tensor is such a sequence.
    lr: the learning rate, or one per client (a (C,) tensor). Each step minimizes each
        client's mean cross-entropy on its batch.
    momentum, weight_decay, prox_mu, anchor, buffers, correction: as in ``sgd_step_``, each
        list laid out as ``tensors``, C clients each (buffers updated in place).
        Plain SGD (none of them, one rate) fuses each weight update into the product that
        makes its gradient; otherwise the chunk's gradients are formed and ``sgd_step_``
        applies them.
    """
    plain = not (momentum or weight_decay or prox_mu or correction is not None
                 or torch.is_tensor(lr))
    last = len(tensors) // 2 - 1
    for x, y in zip(xs, ys, strict=True):
        k, batch = x.shape[0], x.shape[1]
        weights, biases = [t[:k] for t in tensors[0::2]], [t[:k] for t in tensors[1::2]]
        inputs, active = [x], []
        h = x
        for layer, (w, b) in enumerate(zip(weights, biases, strict=True)):
            h = torch.baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))
            if layer < last:
                active.append(h > 0)
                h = h.relu_()
                inputs.append(h)
        # d(mean cross-entropy)/d(logits) = (softmax - one-hot) / batch
        g = torch.softmax(h, dim=-1)
        g.scatter_add_(2, y.unsqueeze(2), torch.full_like(g[..., :1], -1.0))
        g.div_(batch)
        grads = [None] * len(tensors)
        for layer in range(last, -1, -1):
            w = weights[layer]
            below = torch.bmm(g, w).mul_(active[layer - 1]) if layer else None
            if plain:
                w.baddbmm_(g.transpose(1, 2), inputs[layer], alpha=-lr)
                biases[layer].sub_(g.sum(dim=1), alpha=lr)
            else:
                grads[2 * layer] = torch.bmm(g.transpose(1, 2), inputs[layer])
                grads[2 * layer + 1] = g.sum(dim=1)
            g = below
        if not plain:
            sgd_step_([t[:k] for t in tensors], grads, lr[:k] if torch.is_tensor(lr) else lr,
                      momentum=momentum, weight_decay=weight_decay, prox_mu=prox_mu,
                      anchor=_first(anchor, k), buffers=_first(buffers, k),
                      correction=_first(correction, k))


def _first(tensors: list[torch.Tensor] | None, k: int) -> list[torch.Tensor] | None:
    """The first ``k`` clients' rows of each tensor (None stays None)."""
    return None if tensors is None else [t[:k] for t in tensors]
