"""A trainer without torch: a synthetic, plausible learning curve at millisecond cost.

The "model" is one number, its training progress p >= 0 (a one-element float64 array, so the
same weighted averages that aggregate real models aggregate it). Local training adds

    delta_p = gain * steps * (1 - skew / 2) * (1 + 0.2 * eps),   eps ~ N(0, 1)

where skew in [0, 1] is 1 minus the normalized entropy of the client's labels (non-iid clients
learn less that is useful to the global model). Accuracy rises from chance towards a ceiling:

    accuracy = chance + (max_accuracy - chance) * (1 - exp(-p))
    loss     = log(K) * exp(-p) + (1 - max_accuracy)

Message sizes and compute costs are the declared ``params`` and ``flops_per_sample`` (forward;
training is charged ``train_flops_per_sample``, by default 3x the forward: a backward pass of
about twice the forward, as for a model whose every layer needs its input gradient), so the
network and device models behave exactly as with a real model of that size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from netfl.learn.average import weighted_average
from netfl.learn.clients import BYTES_PER_PARAM, ClientData
from netfl.learn.partition import Partition
from netfl.scenario.sections import FakeModel
from netfl.sim.clock import RandomStreams

# a declared model's training FLOPs per forward FLOP, where it does not declare them (uncounted)
TRAIN_FLOPS_PER_FORWARD = 3.0
REFERENCE_LR = 0.05  # the learning rate at which one fake gradient step equals one local step


class FakeTrainer(ClientData):
    def __init__(self, spec: FakeModel, partition: Partition, num_classes: int,
                 streams: RandomStreams):
        super().__init__(partition, streams)
        self.spec, self.num_classes = spec, num_classes
        self.num_params = spec.params
        self.payload_bytes = float(spec.params * BYTES_PER_PARAM)
        self.flops_per_sample = spec.flops_per_sample
        self.train_flops_per_sample = (spec.train_flops_per_sample
                                       or TRAIN_FLOPS_PER_FORWARD * spec.flops_per_sample)
        self._skew = label_skew(partition.counts)

    def init_params(self) -> np.ndarray:
        return np.zeros(1)

    def local_train(self, params: np.ndarray, clients: Sequence[int], steps, lr,
                    batch_size: int, return_buffers: bool = False, **_options):
        """Progress per client (optimizer options such as momentum do not change the curve;
        momentum buffers, where asked for, are zeros). ``params``: one start (1,) or one per
        client ((B, 1), or a sequence of B vectors); ``steps``: one count or one per client,
        as for the torch trainer."""
        params = np.asarray(params)
        starts = np.broadcast_to(params, (len(clients), *params.shape[-1:]))
        counts = np.broadcast_to(np.asarray(steps), (len(clients),))
        if return_buffers:
            thetas = self.local_train(params, clients, steps, lr, batch_size)
            return thetas, [np.zeros_like(t) for t in thetas]
        out = []
        for client, start, n in zip(clients, starts, counts, strict=True):
            noise = 1.0 + 0.2 * self.client_rng(client).standard_normal()
            gain = self.spec.learning_rate_gain * int(n) * (1.0 - self._skew[client] / 2) * noise
            out.append(start + max(gain, 0.0))
        return out

    def gradients(self, params: np.ndarray, clients: Sequence[int],
                  batch_size: int) -> list[np.ndarray]:
        """A "gradient" whose step at rate REFERENCE_LR adds one local step's progress."""
        return [-(p - params) / REFERENCE_LR
                for p in self.local_train(params, clients, 1, REFERENCE_LR, batch_size)]

    def weighted_gradient(self, params: np.ndarray, clients: Sequence[int], batch_size: int,
                          weights) -> np.ndarray:
        grads = self.gradients(params, clients, batch_size)
        return sum(w * g for w, g in zip(weights, grads, strict=True))

    @staticmethod
    def weighted_average(vectors, weights) -> np.ndarray:
        """As the torch trainer's: ``aggregation.weighted_average`` (one-element vectors)."""
        return weighted_average(vectors, weights)

    test_labels = None  # no test set: nothing to screen; evaluate is O(1) anyway

    def evaluate(self, params: np.ndarray, subset=None) -> tuple[float, float]:
        """The synthetic curve at ``params`` (``subset`` is accepted and ignored)."""
        progress = float(params[0])
        chance = 1.0 / self.num_classes
        accuracy = chance + (self.spec.max_accuracy - chance) * (1.0 - math.exp(-progress))
        loss = math.log(self.num_classes) * math.exp(-progress) + (1.0 - self.spec.max_accuracy)
        return accuracy, loss


def label_skew(counts: np.ndarray) -> np.ndarray:
    """Per client, 1 - entropy(label shares) / log(K): 0 for uniform labels, 1 for one label."""
    shares = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(shares > 0, shares * np.log(shares), 0.0).sum(axis=1)
    return 1.0 - entropy / math.log(counts.shape[1])
