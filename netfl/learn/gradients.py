"""Gradient mode of the torch trainer: each client's stochastic gradient, their weighted sum
as one fused pass (or 2-8 parts on the worker threads), and a smoothness estimate. A mixin of
:class:`netfl.learn.trainer.TorchTrainer`, whose model replicas, data and worker pool it uses."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from netfl.learn.flat import flatten
from netfl.learn.parallel import fused_parts, gradient_in_parts


class GradientMethods:
    """``gradients``, ``weighted_gradient`` and ``smoothness`` (see each)."""

    def gradients(self, params: torch.Tensor, clients: Sequence[int],
                  batch_size: int) -> list[torch.Tensor]:
        """Each client's stochastic gradient at ``params`` on one fresh mini-batch."""
        out = []
        for client in clients:
            x, y = self._batch([client], batch_size)
            out.append(flatten(self._main.grads_at(params, x[0], y[0])))
        return out

    def weighted_gradient(self, params: torch.Tensor, clients: Sequence[int], batch_size: int,
                          weights: Sequence[float]) -> torch.Tensor:
        """sum_i weights[i] * (client i's stochastic gradient at ``params``), as one
        forward/backward pass over the concatenated batches, or over ``fused_parts`` equal
        parts of it on the worker threads (torch single-threaded), summed in part order.

        The gradient of sum_i w_i * mean_{s in b_i} loss_s is the same sum as the per-client
        gradients weighted by w_i: each sample carries weight w_i / |b_i|. Each client draws the
        same mini-batch it would draw in ``gradients``. The parts depend only on the number of
        samples, so the result is the same bits whatever the worker count.
        """
        draws = [self.draw_batch(client, batch_size) for client in clients]
        sample_weights = torch.as_tensor(
            np.concatenate([np.full(len(d), float(w) / len(d))
                            for d, w in zip(draws, weights, strict=True)]),
            dtype=self._train_x.dtype, device=self.device)
        index = torch.as_tensor(np.concatenate(draws), device=self.device)
        parts = fused_parts(len(index)) if self.device.type == "cpu" else 1
        if parts == 1:
            return flatten(self._main.grads_at(params, self._train_x[index],
                                               self._train_y[index], sample_weights))
        workers = min(self.max_workers, parts)
        return gradient_in_parts(self._replica_set(workers), params, self._train_x,
                                 self._train_y, index, sample_weights, parts, self._workers())

    def smoothness(self, params: torch.Tensor, client: int, rng: np.random.Generator,
                   samples: int = 256, relative_step: float = 1e-3) -> float:
        """A finite-difference estimate of client ``client``'s smoothness constant at ``params``:
        ||g(params + delta) - g(params)|| / ||delta||, both gradients on the same (first
        ``samples``) samples of the client, delta a random direction of relative size
        ``relative_step``."""
        own = torch.as_tensor(self.partition.client_indices[client][:samples],
                              device=self.device)
        x, y = self._train_x[own], self._train_y[own]
        direction = torch.as_tensor(rng.standard_normal(self.num_params), dtype=params.dtype,
                                    device=self.device)
        scale = relative_step * max(float(params.norm()), 1.0) / float(direction.norm())
        delta = direction * scale
        before = flatten(self._main.grads_at(params, x, y))
        after = flatten(self._main.grads_at(params + delta, x, y))
        return float((after - before).norm() / delta.norm())
