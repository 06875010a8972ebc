"""A partition extension: i.i.d. labels, client sizes from a power law (quantity skew)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from netfl.scenario.types import Section


class ZipfSizesSpec(Section):
    """Client i (in a random order) gets a share proportional to 1 / rank^exponent of the
    shuffled training set, at least one sample each."""

    kind: str
    exponent: float = Field(1.0, ge=0)


class ZipfSizes:
    Spec = ZipfSizesSpec

    @staticmethod
    def split(spec: ZipfSizesSpec, labels: np.ndarray, num_classes: int,
              groups: list[list[int]], rng: np.random.Generator) -> list[np.ndarray]:
        n_clients = sum(len(g) for g in groups)
        shares = 1.0 / np.arange(1, n_clients + 1) ** spec.exponent
        extra = np.floor(shares / shares.sum() * (len(labels) - n_clients)).astype(int)
        sizes = rng.permutation(1 + extra)
        order = rng.permutation(len(labels))
        return np.split(order[:sizes.sum()], np.cumsum(sizes)[:-1])
