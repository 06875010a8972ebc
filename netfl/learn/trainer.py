"""Real training with PyTorch: many clients' local SGD, and evaluation on the test set.

Model parameters travel as one flat float32 vector (what goes on the wire, and what aggregation
averages). The backbone's path is a loop over clients that reuses one model object; the learning
core adds vectorized paths behind the same interface.

Contract shared with :class:`netfl.learn.fake.FakeTrainer`:

* ``init_params()`` -> the initial global parameters;
* ``local_train(params, clients, steps, lr, batch_size)`` -> one parameter vector per client, each
  after ``steps`` SGD steps from ``params`` on fresh mini-batches of that client's data (drawn
  without replacement within a step; a client with fewer samples than a batch uses them all);
* ``evaluate(params)`` -> (accuracy, mean cross-entropy) on the test set;
* ``samples_per_step(client, batch_size)``, ``payload_bytes``, ``flops_per_sample``,
  ``client_sizes``, ``num_params``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector

from netfl.learn.clients import BYTES_PER_PARAM, ClientData
from netfl.learn.data import Dataset
from netfl.learn.models import count_params, flops_per_sample
from netfl.learn.partition import Partition
from netfl.sim.clock import RandomStreams

EVAL_BATCH = 4096


class TorchTrainer(ClientData):
    """Local SGD and evaluation for a torch model on an in-memory data set (CPU by default)."""

    def __init__(self, model: nn.Module, dataset: Dataset, partition: Partition,
                 streams: RandomStreams, device: str = "cpu"):
        super().__init__(partition, streams)
        self.device = torch.device(device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(streams.seed_for("training-init"))
            self.model = model.to(self.device)
            for module in self.model.modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
            self._initial = parameters_to_vector(self.model.parameters()).detach().clone()
        self.num_params = count_params(self.model)
        self.payload_bytes = float(self.num_params * BYTES_PER_PARAM)
        self.flops_per_sample = flops_per_sample(self.model, dataset.input_shape)
        self._train_x = torch.as_tensor(dataset.train_x, device=self.device)
        self._train_y = torch.as_tensor(dataset.train_y, device=self.device)
        self._test_x = torch.as_tensor(dataset.test_x, device=self.device)
        self._test_y = torch.as_tensor(dataset.test_y, device=self.device)
        self._loss = nn.CrossEntropyLoss()

    def init_params(self) -> torch.Tensor:
        return self._initial.clone()

    def local_train(self, params: torch.Tensor, clients: Sequence[int], steps: int, lr: float,
                    batch_size: int) -> list[torch.Tensor]:
        results = []
        weights = list(self.model.parameters())
        for client in clients:
            self._load(params)
            for _ in range(steps):
                index = torch.as_tensor(self.draw_batch(client, batch_size), device=self.device)
                loss = self._loss(self.model(self._train_x[index]), self._train_y[index])
                grads = torch.autograd.grad(loss, weights)
                with torch.no_grad():
                    for weight, grad in zip(weights, grads, strict=True):
                        weight.sub_(grad, alpha=lr)
            results.append(parameters_to_vector(weights).detach().clone())
        return results

    @torch.no_grad()
    def _load(self, params: torch.Tensor) -> None:
        """Copy a flat vector into the model's own parameter storage.

        (torch's vector_to_parameters would make the parameters views of ``params``, so training
        would then overwrite the caller's vector in place.)
        """
        offset = 0
        for weight in self.model.parameters():
            weight.copy_(params[offset:offset + weight.numel()].view_as(weight))
            offset += weight.numel()

    @torch.no_grad()
    def evaluate(self, params: torch.Tensor) -> tuple[float, float]:
        self._load(params)
        correct, loss_sum, total = 0, 0.0, len(self._test_y)
        for start in range(0, total, EVAL_BATCH):
            x = self._test_x[start:start + EVAL_BATCH]
            y = self._test_y[start:start + EVAL_BATCH]
            logits = self.model(x)
            loss_sum += float(nn.functional.cross_entropy(logits, y, reduction="sum"))
            correct += int((logits.argmax(dim=1) == y).sum())
        return correct / total, loss_sum / total
