"""Data sets, loaded once into arrays with their train and test splits: ``load_dataset`` picks
the loader a scenario's data set names.

``digits`` is scikit-learn's bundled set (8x8 images, 10 classes, 1,797 samples, no download) and
``arrays`` the user's ``.npz`` file, both here; Fashion-MNIST and the torchvision sets live in
``datasets``, FedProx's generator in ``synthetic``, image folders in ``images``. The
:class:`Dataset` type (netfl.learn.arrays, re-exported here) is numpy arrays, so that the fake
trainer never imports torch; the torch trainer converts them once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from netfl.errors import CorruptDataFile
from netfl.extensions import call_extension
from netfl.learn.arrays import ARRAY_KEYS, Dataset, checked_arrays
from netfl.scenario.sections import DataSpec, SyntheticSpec

__all__ = ["ARRAY_KEYS", "Dataset", "checked_arrays", "load_arrays", "load_dataset",
           "load_digits", "stratified_split"]


def load_dataset(spec: DataSpec, n_clients: int, rng: np.random.Generator,
                 features: bool = True) -> tuple[Dataset, list[np.ndarray] | None]:
    """Load the data set a scenario names; ``rng`` (the data stream) draws any split.
    ``features`` False: a generated data set keeps only its labels (for the fake model).

    Returns the data set and, for data sets generated per device (synthetic), each client's
    training indices (its natural partition); None otherwise. Raises DatasetNotFound where the
    files are in none of the places searched.
    """
    from netfl.learn import datasets, synthetic

    name = spec.dataset
    if not isinstance(name, str):  # a plug-in's section (netfl.extensions): its loader
        dataset = call_extension("dataset", name.kind, "load", name, n_clients, rng)
        if not isinstance(dataset, Dataset):
            raise CorruptDataFile(f"dataset {name.kind!r}: load() returned "
                                  f"{type(dataset).__name__}, not a netfl.learn.data.Dataset")
        who = f"dataset {name.kind!r}"
        checked_arrays({"x_train": dataset.train_x, "y_train": dataset.train_y,
                        "x_test": dataset.test_x, "y_test": dataset.test_y}, who)
        if max(dataset.train_y.max(), dataset.test_y.max()) >= dataset.num_classes:
            raise CorruptDataFile(f"{who}: a label is not below num_classes "
                                  f"({dataset.num_classes})")
        # netfl's types, whatever the loader gave (float64 features fail inside torch)
        return Dataset(dataset.name, np.asarray(dataset.train_x, dtype=np.float32),
                       np.asarray(dataset.train_y, dtype=np.int64),
                       np.asarray(dataset.test_x, dtype=np.float32),
                       np.asarray(dataset.test_y, dtype=np.int64), dataset.num_classes), None
    if name == "digits":
        return load_digits(spec.test_fraction, rng), None
    if name == "fashion-mnist":
        return datasets.load_fashion_mnist(spec.root, spec.download), None
    if name in ("mnist", "emnist", "cifar10", "cifar100"):
        return datasets.load_torchvision(name, spec.root, spec.download, spec.emnist_split), None
    if name == "synthetic":
        options = spec.synthetic or SyntheticSpec()
        return synthetic.generate_synthetic(
            options.alpha, options.beta, n_clients, rng, dimension=options.dimension,
            num_classes=options.classes, test_fraction=spec.test_fraction,
            max_samples=options.max_samples, keep_features=features)
    if name == "arrays":
        return load_arrays(spec.path), None
    if name == "images":
        from netfl.learn.images import load_images

        return load_images(spec.path, n_clients)
    raise ValueError(f"unknown dataset {name!r}")


def load_arrays(path) -> Dataset:
    """A data set from the user's disk: a ``.npz`` file of ``x_train``, ``y_train``, ``x_test``
    and ``y_test`` (features with the sample axis first, finite; labels integers from 0).
    Raises CorruptDataFile naming the file and what is wrong."""
    def fail(message: str):
        raise CorruptDataFile(f"{path}: {message}")

    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files if k in ARRAY_KEYS}
            found = list(archive.files)
    except (OSError, ValueError, EOFError) as exc:
        fail(f"not a readable .npz file: {exc}")
    missing = [k for k in ARRAY_KEYS if k not in arrays]
    if missing:
        fail(f"needs arrays {', '.join(ARRAY_KEYS)}; missing {', '.join(missing)} (found "
             f"{', '.join(found) or 'none'})")
    checked_arrays(arrays, str(path))
    classes = int(max(arrays["y_train"].max(), arrays["y_test"].max())) + 1
    return Dataset(Path(path).stem, arrays["x_train"].astype(np.float32),
                   arrays["y_train"].astype(np.int64), arrays["x_test"].astype(np.float32),
                   arrays["y_test"].astype(np.int64), classes)


def load_digits(test_fraction: float, rng: np.random.Generator) -> Dataset:
    """scikit-learn's digits as (N, 1, 8, 8) images, pixels scaled to [0, 1], with a stratified
    random test split."""
    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    x = (bunch.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = bunch.target.astype(np.int64)
    train_idx, test_idx = stratified_split(y, test_fraction, rng)
    return Dataset("digits", x[train_idx], y[train_idx], x[test_idx], y[test_idx], 10)


def stratified_split(labels: np.ndarray, test_fraction: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test): ``test_fraction`` of each class (rounded) goes to test."""
    train, test = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        cut = int(round(len(members) * test_fraction))
        test.append(members[:cut])
        train.append(members[cut:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))
