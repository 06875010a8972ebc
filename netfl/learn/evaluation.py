"""Evaluation of the torch trainer on the test set, whole or a subset of it (the target
screen's stages), in batches on the worker threads. A mixin of
:class:`netfl.learn.trainer.TorchTrainer`, whose test tensors, model replicas and worker pool
it uses."""

from __future__ import annotations

import numpy as np
import torch

from netfl.learn.parallel import batch_scores

EVAL_BATCH = 1000
CACHED_SUBSETS = 4  # test subsets kept gathered (the target screen's three stages, one more)
# A subset is evaluated in this many batches: the target screen's first stage of 1,000 samples
# in one batch of 1,000 ran on one core (one batch, one worker), its third of 3,000 in three
# split 2:1 over two; CHFL's FedAvg evaluated 35% fewer test samples with the stages than with
# one 2,000-sample subset, yet took as long
SUBSET_BATCHES = 8


class EvaluationMethods:
    """``test_labels`` and ``evaluate`` (see each). The trainer provides ``_test_x`` and
    ``_test_y`` (tensors on its ``device``), ``_subsets`` (a dict, empty at first),
    ``max_workers``, ``_replica_set(n)`` and ``_workers()``."""

    @property
    def test_labels(self) -> np.ndarray:
        """The test set's labels (what a screening subset is stratified on)."""
        return self._test_y.cpu().numpy()

    @torch.no_grad()
    def evaluate(self, params: torch.Tensor,
                 subset: np.ndarray | None = None) -> tuple[float, float]:
        """(accuracy, mean cross-entropy) of ``params`` on the test set, or on the test samples
        at indices ``subset`` (see netfl.learn.screening).

        Batches of EVAL_BATCH (a subset: SUBSET_BATCHES equal batches, whatever its size, so
        that every worker has a share of a small one), split among the worker threads on a
        CPU, each with its own model replica and torch single-threaded; the per-batch sums are
        added in batch order, so the result is the same bits whatever the worker count."""
        test_x, test_y = self._test_x, self._test_y
        if subset is not None:
            cached = self._subsets.get(id(subset))
            if cached is None or not np.array_equal(cached[0], subset):
                index = torch.as_tensor(subset, device=self.device)
                cached = (np.array(subset, copy=True), test_x[index], test_y[index])
                if len(self._subsets) >= CACHED_SUBSETS:  # the oldest goes
                    del self._subsets[next(iter(self._subsets))]
                self._subsets[id(subset)] = cached
            test_x, test_y = cached[1], cached[2]
        batch = EVAL_BATCH if subset is None else max(-(-len(test_y) // SUBSET_BATCHES), 1)
        workers = min(self.max_workers, -(-len(test_y) // batch))
        if self.device.type != "cpu":
            workers = 1
        scores = batch_scores(self._replica_set(workers), params, test_x, test_y, batch,
                              self._workers())
        correct, loss_sum = 0, 0.0
        for right, loss in scores:
            correct += right
            loss_sum += loss
        return correct / len(test_y), loss_sum / len(test_y)
