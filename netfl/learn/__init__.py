"""Learning: data sets, partitions, models and trainers (see docs/models/learning.md).

``build_trainer`` is the entry point used by the simulation; torch is imported only for real
models, so runs with the fake model never load it.
"""

from __future__ import annotations

from netfl.learn.data import Dataset, load_dataset
from netfl.learn.partition import Partition, make_partition
from netfl.scenario.sections import DataSpec, FakeModel
from netfl.sim.clock import RandomStreams


def build_trainer(data: DataSpec, model_spec, n_clients: int, streams: RandomStreams):
    """Load the data, partition it over ``n_clients`` and build the trainer for ``model_spec``.

    Returns (trainer, dataset, partition). The data stream draws the split and the partition; the
    training stream draws mini-batches and (as a torch seed) the initial weights.
    """
    dataset = load_dataset(data, streams.get("data"))
    partition = make_partition(data.partition, dataset.train_y, n_clients, dataset.num_classes,
                               streams.get("data"))
    if isinstance(model_spec, FakeModel):
        from netfl.learn.fake import FakeTrainer

        trainer = FakeTrainer(model_spec, partition, dataset.num_classes, streams.get("training"))
    else:
        from netfl.learn.models import build_model
        from netfl.learn.trainer import TorchTrainer

        module = build_model(model_spec, dataset.input_shape, dataset.num_classes)
        trainer = TorchTrainer(module, dataset, partition, streams.get("training"),
                               streams.seed_for("training"))
    return trainer, dataset, partition


__all__ = ["Dataset", "Partition", "build_trainer", "load_dataset", "make_partition"]
