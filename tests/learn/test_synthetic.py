"""FedProx's Synthetic(alpha, beta) generator."""

from __future__ import annotations

import numpy as np
import pytest

from netfl.learn.synthetic import generate_synthetic


def label_entropy(dataset, partition) -> float:
    """Mean over devices of the entropy (nats) of the device's training label distribution."""
    total = 0.0
    for indices in partition:
        p = np.bincount(dataset.train_y[indices], minlength=dataset.num_classes) / len(indices)
        p = p[p > 0]
        total += float(-(p * np.log(p)).sum())
    return total / len(partition)


def test_synthetic_shapes_and_types():
    data, partition = generate_synthetic(0.5, 0.5, 7, np.random.default_rng(0), dimension=12,
                                         num_classes=5, test_fraction=0.25, max_samples=80)
    assert data.train_x.shape[1:] == (12,) and data.test_x.shape[1:] == (12,)
    assert data.train_x.dtype == np.float32 and data.train_y.dtype == np.int64
    assert data.num_classes == 5 and data.train_y.max() < 5 and data.train_y.min() >= 0
    assert len(partition) == 7
    sizes = np.array([len(p) for p in partition])
    assert (sizes <= 80).all()
    n_total = len(data.train_y) + len(data.test_y)
    assert abs(len(data.test_y) / n_total - 0.25) < 0.05


def test_synthetic_is_deterministic_for_a_seed():
    a, pa = generate_synthetic(1.0, 1.0, 10, np.random.default_rng(42), max_samples=200)
    b, pb = generate_synthetic(1.0, 1.0, 10, np.random.default_rng(42), max_samples=200)
    for field in ("train_x", "train_y", "test_x", "test_y"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert all(np.array_equal(x, y) for x, y in zip(pa, pb, strict=True))
    c, _ = generate_synthetic(1.0, 1.0, 10, np.random.default_rng(43), max_samples=200)
    assert not np.array_equal(a.train_x[:10], c.train_x[:10])


def test_natural_partition_covers_the_train_set_exactly_once():
    data, partition = generate_synthetic(1.0, 1.0, 25, np.random.default_rng(5))
    joined = np.concatenate(partition)
    assert joined.dtype == np.int64
    np.testing.assert_array_equal(np.sort(joined), np.arange(len(data.train_y)))
    assert all(len(p) > 0 for p in partition)


def test_uncapped_sizes_follow_fedprox_lognormal_plus_50():
    data, partition = generate_synthetic(0.0, 0.0, 200, np.random.default_rng(6),
                                         dimension=4, test_fraction=0.0)
    sizes = np.array([len(p) for p in partition])
    assert sizes.min() >= 50 and len(data.test_y) == 0
    # median of floor(LogNormal(4, 2)) + 50 is about e^4 + 50 = 104.6
    assert 80 < np.median(sizes) < 135


def test_larger_beta_concentrates_each_devices_labels():
    entropies = [label_entropy(*generate_synthetic(s, s, 100, np.random.default_rng(0),
                                                   max_samples=300))
                 for s in (0.0, 1.0, 2.0)]
    # Seed 0 gives about 0.47, 0.36, 0.24 nats; ten seeds all keep this order.
    assert entropies[0] > entropies[1] + 0.05 > entropies[2] + 0.1


def test_alpha_alone_does_not_change_the_labels():
    """u_k shifts every class's logit equally, so argmax is unchanged (see the docstring)."""
    a, _ = generate_synthetic(0.0, 1.0, 20, np.random.default_rng(9), max_samples=200)
    b, _ = generate_synthetic(3.0, 1.0, 20, np.random.default_rng(9), max_samples=200)
    np.testing.assert_array_equal(a.train_x, b.train_x)
    assert (a.train_y == b.train_y).mean() > 0.999


def test_synthetic_rejects_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="alpha"):
        generate_synthetic(-1.0, 0.0, 3, rng)
    with pytest.raises(ValueError, match="n_clients"):
        generate_synthetic(0.0, 0.0, 0, rng)
    with pytest.raises(ValueError, match="test_fraction"):
        generate_synthetic(0.0, 0.0, 3, rng, test_fraction=1.0)


def test_a_scenario_can_ask_for_the_synthetic_data_set():
    # Regression: load_dataset shadowed the synthetic module with its options and crashed.
    from netfl.learn.data import load_dataset
    from netfl.scenario.sections import DataSpec

    for spec in (DataSpec(dataset="synthetic"),
                 DataSpec(dataset="synthetic", synthetic={"alpha": 0.5, "max_samples": 50})):
        data, partition = load_dataset(spec, 4, np.random.default_rng(0))
        assert len(partition) == 4 and data.num_classes == 10
