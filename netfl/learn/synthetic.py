"""FedProx's Synthetic(alpha, beta) data: one device per client, generated, never downloaded."""

from __future__ import annotations

import numpy as np

from netfl.learn.arrays import Dataset


def generate_synthetic(alpha: float, beta: float, n_clients: int, rng: np.random.Generator,
                       dimension: int = 60, num_classes: int = 10, test_fraction: float = 0.2,
                       max_samples: int | None = None,
                       keep_features: bool = True) -> tuple[Dataset, list[np.ndarray]]:
    """Synthetic(alpha, beta) of FedProx ("Federated Optimization in Heterogeneous Networks",
    MLSys 2020, Section 5.1, and its authors' generator script).

    For each device k = 1..n_clients (d = ``dimension``, C = ``num_classes``)::

        n_k  = floor(LogNormal(4, 2)) + 50          samples (min(n_k, max_samples) if capped)
        u_k ~ N(0, alpha^2),  B_k ~ N(0, beta^2)
        W_k in R^{C x d}, b_k in R^C:  entries ~ N(u_k, 1)
        v_k in R^d:                    entries ~ N(B_k, 1)
        x ~ N(v_k, Sigma),  Sigma diagonal, Sigma_jj = j^(-1.2), j = 1..d
        y = argmax softmax(W_k x + b_k)             (= argmax of the logits)

    The paper writes u_k ~ N(0, alpha); FedProx's script passes alpha (and beta) as the standard
    deviation, as here. LogNormal(4, 2) is exp of N(4, 2^2).

    Note, as specified (paper and script alike): every entry of W_k and b_k has the same mean
    u_k, so u_k adds the same amount, u_k (1 + sum_j x_j), to every class's logit and never
    changes the argmax. alpha therefore does not change the generated data at all (for the same
    rng state, the samples and labels are identical for any alpha); the devices' label mixes
    differ through W_k's own N(0, 1) part and through beta, whose larger input means make each
    device's labels more concentrated on a few classes.

    Each device's first n_k - t_k samples are its training data and its last
    t_k = round(test_fraction * n_k) (at most n_k - 1) its test data; the samples are i.i.d.
    within a device, so this is a random split. Draws are taken from ``rng`` in a fixed order,
    so a generator in the same state gives identical output.

    With ``keep_features`` False (a model that never reads them: the fake model) the samples
    are drawn as usual, for their labels, and dropped: the features are a zero-stride view of
    the right shape (the same labels and draws, no memory).

    Returns:
        (dataset, partition): the pooled Dataset (features float32 (N, d), labels int64, devices
        in order) and, per device, the int64 indices of its training samples in
        ``dataset.train_x`` (contiguous ranges that cover the training set exactly once).
    """
    if alpha < 0 or beta < 0:
        raise ValueError(f"alpha and beta must be >= 0, got alpha={alpha}, beta={beta}")
    if n_clients < 1:
        raise ValueError(f"n_clients must be >= 1, got {n_clients}")
    if dimension < 1 or num_classes < 2:
        raise ValueError(f"need dimension >= 1 and num_classes >= 2, got {dimension}, "
                         f"{num_classes}")
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    if max_samples is not None and max_samples < 1:
        raise ValueError(f"max_samples must be >= 1 or None, got {max_samples}")

    sizes = rng.lognormal(4.0, 2.0, n_clients).astype(np.int64) + 50
    if max_samples is not None:
        sizes = np.minimum(sizes, max_samples)
    u = rng.normal(0.0, alpha, n_clients)
    big_b = rng.normal(0.0, beta, n_clients)
    v = rng.normal(big_b[:, None], 1.0, (n_clients, dimension))
    sigma_sd = np.arange(1, dimension + 1, dtype=np.float64) ** -0.6  # sqrt(j^-1.2)

    train_x, train_y, test_x, test_y, partition = [], [], [], [], []
    start = 0
    for k in range(n_clients):
        n = int(sizes[k])
        w = rng.normal(u[k], 1.0, (num_classes, dimension))
        b = rng.normal(u[k], 1.0, num_classes)
        x = v[k] + sigma_sd * rng.standard_normal((n, dimension))
        y = np.argmax(x @ w.T + b, axis=1).astype(np.int64)
        n_test = min(int(round(n * test_fraction)), n - 1)
        n_train = n - n_test
        if keep_features:
            train_x.append(x[:n_train])
            test_x.append(x[n_train:])
        train_y.append(y[:n_train])
        test_y.append(y[n_train:])
        partition.append(np.arange(start, start + n_train, dtype=np.int64))
        start += n_train

    train_labels, test_labels = np.concatenate(train_y), np.concatenate(test_y)
    if keep_features:
        features = (np.concatenate(train_x).astype(np.float32),
                    np.concatenate(test_x).astype(np.float32))
    else:
        features = tuple(np.broadcast_to(np.float32(0.0), (len(labels), dimension))
                         for labels in (train_labels, test_labels))
    dataset = Dataset(f"synthetic({alpha:g},{beta:g})", features[0], train_labels,
                      features[1], test_labels, num_classes)
    return dataset, partition
