import numpy as np
import pytest

from netfl.learn.fake import label_skew
from netfl.learn.partition import partition_dirichlet, partition_iid

LABELS = np.repeat(np.arange(10), 100)  # 1,000 samples, 100 per class


def check_consistent(part, n_clients):
    everything = np.concatenate(part.client_indices)
    assert len(np.unique(everything)) == len(everything)  # no sample twice
    assert part.counts.shape == (n_clients, 10)
    for i, idx in enumerate(part.client_indices):
        np.testing.assert_array_equal(np.bincount(LABELS[idx], minlength=10), part.counts[i])


def test_iid_uses_every_sample_in_near_equal_parts():
    part = partition_iid(LABELS, 7, 10, np.random.default_rng(0))
    check_consistent(part, 7)
    assert part.sizes.sum() == 1000 and part.sizes.max() - part.sizes.min() <= 1


@pytest.mark.parametrize("alpha", [0.05, 0.5, 100.0])
def test_dirichlet_gives_equal_sizes(alpha):
    part = partition_dirichlet(LABELS, 20, 10, alpha, np.random.default_rng(1))
    check_consistent(part, 20)
    assert (part.sizes == 50).all()


def test_smaller_alpha_means_more_label_skew():
    rng = np.random.default_rng(2)
    skews = [label_skew(partition_dirichlet(LABELS, 20, 10, a, rng).counts).mean()
             for a in (0.05, 0.5, 100.0)]
    assert skews[0] > skews[1] > skews[2]
    assert skews[2] < 0.1


def test_too_many_clients():
    with pytest.raises(ValueError, match="cannot give"):
        partition_iid(LABELS[:5], 10, 10, np.random.default_rng(0))
