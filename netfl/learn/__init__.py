"""Learning: data sets, partitions, models and trainers (see docs/models/learning.md).

``build_data`` and ``build_trainer`` are the entry points used by the simulation; torch is
imported only for real models, so runs with the fake model never load it.
"""

from __future__ import annotations

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.extensions import ExtensionError
from netfl.learn.data import Dataset, load_dataset
from netfl.learn.partition import Partition, make_partition
from netfl.scenario.sections import DataSpec, FakeModel
from netfl.sim.clock import RandomStreams


def build_data(data: DataSpec, groups: list[list[int]], streams: RandomStreams,
               features: bool = True) -> tuple[Dataset, Partition]:
    """Load the data set and partition it over the clients (the ``data`` stream draws both).

    groups: the client indices under each edge server (two-level partitions follow them).
    features: False where the model never reads them (the fake model): generated data keeps
    only its labels.
    Raises ScenarioError where the partition cannot be made (e.g. more clients than samples).
    """
    n_clients = sum(len(g) for g in groups)
    dataset, natural = load_dataset(data, n_clients, streams.get("data"), features)
    try:
        partition = make_partition(data.partition, dataset.train_y, dataset.num_classes, groups,
                                   streams.get("data"), natural)
    except ValueError as exc:
        problem = ScenarioProblem("data.partition", str(exc), has_value=False)
        raise ScenarioError([problem]) from None
    empty = [i for i, size in enumerate(partition.sizes) if size == 0]
    if empty:  # they would download, "train" on nothing and upload an unchanged model
        shown = ", ".join(f"client {i}" for i in empty[:5]) + (" ..." if len(empty) > 5 else "")
        raise ScenarioError([ScenarioProblem(
            "data.partition", f"{len(empty)} of {n_clients} clients get no training sample "
            f"({shown}): give the partition more samples per label or client (fewer clients, "
            f"a larger min size, more labels per client)", data.partition.kind)])
    return dataset, partition


def build_trainer(model_spec, dataset: Dataset, partition: Partition, streams: RandomStreams):
    """The trainer for ``model_spec``: mini-batches come from per-client ``training-batches``
    streams and initial weights from a ``training-init`` seed."""
    if isinstance(model_spec, FakeModel):
        from netfl.learn.fake import FakeTrainer

        return FakeTrainer(model_spec, partition, dataset.num_classes, streams)
    from netfl.learn.models import build_model
    from netfl.learn.trainer import TorchTrainer

    try:
        _check_model_fits(model_spec, dataset)
        module = build_model(model_spec, dataset.input_shape, dataset.num_classes)
    except ValueError as exc:  # e.g. an architecture that cannot take this input shape
        problem = ScenarioProblem("model.kind", f"{exc} (data: {dataset.name}, input shape "
                                  f"{dataset.input_shape})", model_spec.kind)
        raise ScenarioError([problem]) from None
    trainer = TorchTrainer(module, dataset, partition, streams, device=model_spec.device,
                           path=model_spec.trainer, threads=model_spec.threads)
    charged = getattr(model_spec, "train_flops_per_sample", None)
    if charged is not None:  # a stand-in cost: another model's training time, this one's learning
        trainer.train_flops_per_sample = float(charged)
    return trainer


# Host copies of a model's parameters a run holds at once: the global model, an aggregate,
# weights, gradients and momentum of a training batch, and updates awaiting aggregation.
HOST_MODEL_COPIES = 8


def _check_model_fits(model_spec, dataset: Dataset) -> None:
    """Count the model's parameters on torch's meta device (nothing allocated) and refuse a
    model whose copies cannot fit in the host's memory: a hidden layer of 1e9 units asked
    torch for 256 GB and failed deep inside it."""
    import torch

    from netfl.learn.models import build_model, count_params
    from netfl.sim.cores import available_memory_bytes

    try:
        with torch.device("meta"):
            params = count_params(build_model(model_spec, dataset.input_shape,
                                              dataset.num_classes))
    except ExtensionError:  # an extension's build that needs real tensors: not checked here
        return
    needed, available = params * 4 * HOST_MODEL_COPIES, available_memory_bytes()
    if available is not None and needed > available:
        field = "model.hidden" if getattr(model_spec, "hidden", None) else "model.kind"
        value = model_spec.hidden if field == "model.hidden" else model_spec.kind
        raise ScenarioError([ScenarioProblem(
            field, f"a model of {params:,} parameters needs about {needed / 1e9:,.1f} GB of "
            f"host memory ({HOST_MODEL_COPIES} float32 copies); this machine has "
            f"{available / 1e9:,.1f} GB available", value)])


__all__ = ["Dataset", "Partition", "build_data", "build_trainer", "load_dataset",
           "make_partition"]
