"""The hand-written dense path: same SGD as a per-client loop, taken only where it applies."""

import numpy as np
import pytest
import torch
from torch import nn

from netfl.learn import dense
from netfl.learn.dense import chunk_size, dense_layers
from netfl.learn.models import build_model
from netfl.scenario.sections import MlpModel
from tests.learn.test_trainer import digits, make, partition, reference  # noqa: F401


def deep_mlp():
    return build_model(MlpModel(kind="mlp", hidden=[32, 16]), (1, 8, 8), 10)


def linear():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10))


def test_the_rule_takes_only_plain_dense_relu_stacks():
    assert dense_layers(deep_mlp()) == 3
    assert dense_layers(linear()) == 1
    assert dense_layers(nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))) is None
    assert dense_layers(nn.Sequential(nn.Linear(4, 4), nn.ReLU())) is None
    assert dense_layers(nn.Sequential(nn.Linear(4, 2, bias=False))) is None
    assert dense_layers(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(8, 2))) is None


def test_chunks_fit_the_cache_and_hold_at_least_one_client():
    assert chunk_size(199_210) == dense.CACHE_BYTES // (199_210 * 4)
    assert chunk_size(10**9) == 1


@pytest.mark.parametrize("model_fn", [deep_mlp, linear])
@pytest.mark.parametrize("cache_bytes", [dense.CACHE_BYTES, 1])  # one chunk; one client a chunk
def test_dense_sgd_agrees_with_a_plain_per_client_loop(digits, model_fn, cache_bytes,  # noqa: F811
                                                       monkeypatch):
    monkeypatch.setattr(dense, "CACHE_BYTES", cache_bytes)
    part = partition(digits, ragged=True)  # two batch sizes: two stacked calls
    trainer = make(digits, model_fn, "vmap", part=part)
    used = []
    original = dense.dense_sgd_
    monkeypatch.setattr("netfl.learn.trainer.dense_sgd_",
                        lambda *a, **k: used.append(a[1][0].shape[0]) or original(*a, **k))
    params = trainer.init_params()
    clients, steps, batch, lr = [0, 1, 2, 3, 4, 5], 4, 16, 0.1
    got = trainer.local_train(params, clients, steps, lr, batch)
    want = reference(trainer, digits, part, params, clients, steps, lr, batch)
    assert used and sum(used) == len(clients)  # the chunks' clients
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert torch.equal(params, trainer.init_params())


@pytest.mark.parametrize("options", [{"momentum": 0.9}, {"weight_decay": 1e-3},
                                     {"prox_mu": 0.1}, {"lr": [0.1, 0.2]}, {"corrections": 1}])
def test_every_sgd_option_takes_the_dense_path_and_agrees_with_a_per_client_loop(
        digits, options, monkeypatch):  # noqa: F811
    # momentum, weight decay, FedProx, SCAFFOLD's corrections and per-client rates form the
    # chunk's gradients and apply sgd_step_ (before: the vmap path, 4x slower on Group-FEL's
    # FedProx)
    trainer = make(digits, deep_mlp, "vmap")
    used = []
    original = dense.dense_sgd_
    monkeypatch.setattr("netfl.learn.trainer.dense_sgd_",
                        lambda *a, **k: used.append(1) or original(*a, **k))
    lr = options.pop("lr", 0.1)
    params = trainer.init_params()
    if options.pop("corrections", None):
        options["corrections"] = [torch.full_like(params, 0.01), torch.full_like(params, -0.02)]
    got = trainer.local_train(params, [0, 1], 3, lr, 16, **options)
    want = reference(trainer, digits, trainer.partition, params, [0, 1], 3,
                     lr, 16, **options)
    assert used
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_the_loop_path_is_left_alone(digits, monkeypatch):  # noqa: F811
    trainer = make(digits, deep_mlp, "loop")
    monkeypatch.setattr("netfl.learn.trainer.dense_sgd_",
                        lambda *a: pytest.fail("the loop path went dense"))
    out = trainer.local_train(trainer.init_params(), [0, 1], 2, 0.1, 16)
    assert len(out) == 2 and np.isfinite(out[0].numpy()).all()


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("cache_bytes", [1, 20_000])
def test_results_are_the_same_bits_for_any_chunking_worker_and_thread_count(
        digits, workers, cache_bytes, monkeypatch):  # noqa: F811
    clients, args = list(range(6)), (4, 0.1, 16)
    want = make(digits, deep_mlp, "vmap").local_train(
        make(digits, deep_mlp).init_params(), clients, *args)
    monkeypatch.setattr(dense, "CACHE_BYTES", cache_bytes)
    trainer = make(digits, deep_mlp, "vmap")
    trainer.max_workers = workers
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        got = trainer.local_train(trainer.init_params(), clients, *args)
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize("model_fn", [deep_mlp, linear])
def test_evaluation_is_the_same_bits_for_any_worker_count(digits, model_fn, monkeypatch):  # noqa: F811
    monkeypatch.setattr("netfl.learn.evaluation.EVAL_BATCH", 50)  # several batches
    results = set()
    for workers in (1, 2, 3):
        trainer = make(digits, model_fn)
        trainer.max_workers = workers
        params = trainer.init_params()
        results.add(trainer.evaluate(params))
        results.add(trainer.evaluate(params, np.arange(0, len(trainer.test_labels), 3)) + (0,))
    assert len(results) == 2  # one full, one subset result


def test_trainers_share_one_pool_of_threads(digits):  # noqa: F811
    import threading

    make(digits, deep_mlp).evaluate(make(digits, deep_mlp).init_params())
    before = threading.active_count()
    for _ in range(5):  # as a sweep worker runs scenario after scenario
        trainer = make(digits, deep_mlp)
        trainer.evaluate(trainer.init_params())
        trainer.local_train(trainer.init_params(), list(range(6)), 1, 0.1, 16)
    assert threading.active_count() == before
