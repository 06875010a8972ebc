"""The :class:`Dataset` type: a data set as numpy arrays with its train and test splits, and
the check that arrays make one (every loader returns a Dataset; netfl.learn.data picks the
loader). numpy only, so that the fake trainer never imports torch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.errors import CorruptDataFile


@dataclass(frozen=True)
class Dataset:
    """Features are float32 with the sample axis first; labels int64 in 0..num_classes-1."""

    name: str
    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    num_classes: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.train_x.shape[1:])


ARRAY_KEYS = ("x_train", "y_train", "x_test", "y_test")


def checked_arrays(arrays: dict, who: str) -> None:
    """Raise CorruptDataFile naming ``who`` where ``arrays`` (x_train, y_train, x_test,
    y_test) are not a data set: features (N, ...) of finite numbers, labels (N,) of integers
    from 0, the same N for both, the same sample shape in train and test."""
    def fail(message: str):
        raise CorruptDataFile(f"{who}: {message}")

    for split in ("train", "test"):
        x, y = np.asarray(arrays[f"x_{split}"]), np.asarray(arrays[f"y_{split}"])
        if x.ndim < 2 or y.ndim != 1 or len(x) != len(y) or len(y) == 0:
            fail(f"x_{split} {x.shape} and y_{split} {y.shape}: expected features (N, ...) and "
                 f"labels (N,) of the same N > 0")
        if not np.issubdtype(x.dtype, np.number) or not np.isfinite(x).all():
            fail(f"x_{split} must hold finite numbers")
        if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
            fail(f"y_{split} must hold integer labels from 0")
    if np.shape(arrays["x_train"])[1:] != np.shape(arrays["x_test"])[1:]:
        fail(f"x_train and x_test differ in shape per sample: "
             f"{np.shape(arrays['x_train'])[1:]} and {np.shape(arrays['x_test'])[1:]}")
