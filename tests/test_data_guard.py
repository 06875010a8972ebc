"""The guard that keeps a fresh machine green: a test reading Fashion-MNIST without the
``needs_fashion_mnist`` mark must fail on every machine, the data set installed or not."""

from __future__ import annotations

import pytest

from netfl.errors import DatasetNotFound
from netfl.learn import datasets
from tests.conftest import UNMARKED_DATA_FOLDER, needs_fashion_mnist


def test_an_unmarked_test_cannot_read_fashion_mnist():
    with pytest.raises(DatasetNotFound) as error:
        datasets.load_fashion_mnist(None, download=False)
    assert str(UNMARKED_DATA_FOLDER) in str(error.value)


def test_an_unmarked_test_cannot_read_mnist_from_the_cache():
    assert datasets.default_cache_dir() == UNMARKED_DATA_FOLDER


@needs_fashion_mnist
def test_a_marked_test_reads_the_real_folders():
    assert datasets.DEBIAN_FASHION_MNIST != UNMARKED_DATA_FOLDER
    assert datasets.default_cache_dir() != UNMARKED_DATA_FOLDER
