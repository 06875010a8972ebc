"""A data-set extension: Gaussian blobs from scikit-learn (Spec + load)."""

from __future__ import annotations

import numpy as np
from pydantic import Field, PositiveInt

from netfl.learn.data import Dataset
from netfl.scenario.types import Section


class BlobsSpec(Section):
    """samples: training and test samples in all (a quarter held out); features; classes;
    spread: each blob's standard deviation."""

    kind: str
    samples: PositiveInt = 2000
    features: PositiveInt = 10
    classes: int = Field(4, ge=2)
    spread: float = Field(2.0, gt=0)


class Blobs:
    Spec = BlobsSpec

    @staticmethod
    def load(spec: BlobsSpec, n_clients: int, rng: np.random.Generator) -> Dataset:
        from sklearn.datasets import make_blobs

        x, y = make_blobs(spec.samples, spec.features, centers=spec.classes,
                          cluster_std=spec.spread, random_state=int(rng.integers(2**31)))
        test = spec.samples // 4
        return Dataset("blobs", x[test:].astype(np.float32), y[test:].astype(np.int64),
                       x[:test].astype(np.float32), y[:test].astype(np.int64), spec.classes)
