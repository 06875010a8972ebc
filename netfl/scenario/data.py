"""The ``data`` section: which data set (netfl's, the user's own files, or an extension's),
where to find it, and how to split it over the clients."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveInt, model_validator

from netfl.scenario.extension_fields import or_extension
from netfl.scenario.partitions import IidPartition, Partition
from netfl.scenario.plugins import DATASET_GROUP
from netfl.scenario.types import ResolvedPath, Section


class SyntheticSpec(Section):
    """Synthetic(alpha, beta) of FedProx ("Federated Optimization in Heterogeneous Networks",
    MLSys 2020): alpha sets how much the devices' models
    differ, beta how much their inputs differ; one device per client."""

    alpha: NonNegativeFloat = 1.0
    beta: NonNegativeFloat = 1.0
    dimension: PositiveInt = 60
    classes: int = Field(10, ge=2)
    max_samples: PositiveInt | None = Field(None, description="cap on samples per device")


DatasetName = Literal[
    "fashion-mnist", "mnist", "emnist", "cifar10", "cifar100", "digits", "synthetic", "arrays",
    "images",
]


class DataSpec(Section):
    """Which data, where to find it, and how to split it over clients.

    root: a folder holding the data set's files (looked at first); download: let torchvision
    fetch it where nothing is found and the machine has internet; path: the user's own data,
    the ``.npz`` file of ``dataset: arrays`` (arrays ``x_train``, ``y_train``, ``x_test``,
    ``y_test``: features with the sample axis first, integer labels from 0) or the folder of
    ``dataset: images`` (``train/<class>/`` or, naturally federated, ``clients/<client>/<class>/``,
    and ``test/<class>/``; docs/models/datasets.md).
    """

    dataset: or_extension(DatasetName, DATASET_GROUP, sections_only=True) = "fashion-mnist"
    root: ResolvedPath | None = None
    path: ResolvedPath | None = None
    download: bool = True
    emnist_split: Literal["balanced", "byclass", "bymerge", "digits", "letters", "mnist"] = (
        "balanced")
    synthetic: SyntheticSpec | None = None
    test_fraction: float = Field(0.25, gt=0, lt=1,
                                 description="held-out share (digits and synthetic)")
    partition: Partition = IidPartition()

    @property
    def dataset_name(self) -> str:
        """The data set's name: a built-in's, or an extension's kind."""
        return self.dataset if isinstance(self.dataset, str) else self.dataset.kind

    @model_validator(mode="after")
    def _consistent(self) -> DataSpec:
        if self.synthetic is not None and self.dataset != "synthetic":
            raise ValueError("the synthetic block applies to dataset: synthetic only")
        if (self.path is not None) != (self.dataset in ("arrays", "images")):
            raise ValueError("dataset: arrays and dataset: images read data.path, and data.path "
                             "is for them only")
        if self.dataset == "arrays" and not self.path.is_file():
            raise ValueError(f"data.path {self.path} is not a file (dataset: arrays reads a "
                             f".npz)")
        if self.dataset == "images" and not self.path.is_dir():
            raise ValueError(f"data.path {self.path} is not a folder (dataset: images reads "
                             f"train/ or clients/, and test/)")
        if self.partition.kind == "natural" and self.dataset not in ("synthetic", "images"):
            raise ValueError("partition kind natural needs a data set with its own split "
                             "(synthetic, or images in per-client folders)")
        return self
