import numpy as np
import pytest
import torch

from netfl.learn.data import load_digits
from netfl.learn.fake import FakeTrainer
from netfl.learn.models import build_model
from netfl.learn.partition import partition_iid
from netfl.learn.trainer import TorchTrainer
from netfl.scenario.sections import FakeModel, MlpModel
from netfl.sim.clock import RandomStreams


@pytest.fixture(scope="module")
def digits():
    return load_digits(0.25, np.random.default_rng(0))


def make_trainer(digits, seed=0, n_clients=5):
    part = partition_iid(digits.train_y, n_clients, 10, np.random.default_rng(0))
    model = build_model(MlpModel(kind="mlp", hidden=[32]), digits.input_shape, 10)
    return TorchTrainer(model, digits, part, RandomStreams(seed))


def test_digits_split_is_stratified(digits):
    assert len(digits.train_y) + len(digits.test_y) == 1797
    shares = np.bincount(digits.test_y) / np.bincount(np.concatenate([digits.train_y,
                                                                       digits.test_y]))
    assert np.allclose(shares, 0.25, atol=0.01)
    assert digits.train_x.dtype == np.float32 and digits.train_x.max() <= 1.0


def test_local_training_lowers_the_loss(digits):
    trainer = make_trainer(digits)
    w0 = trainer.init_params()
    _, loss0 = trainer.evaluate(w0)
    w1 = trainer.local_train(w0, [0], steps=50, lr=0.5, batch_size=32)[0]
    accuracy, loss1 = trainer.evaluate(w1)
    assert loss1 < loss0 / 2 and accuracy > 0.6
    assert torch.equal(w0, trainer.init_params())  # the input is not modified


def test_same_seed_same_weights_and_updates(digits):
    a, b = make_trainer(digits, seed=3), make_trainer(digits, seed=3)
    assert torch.equal(a.init_params(), b.init_params())
    ua = a.local_train(a.init_params(), [0, 1], 3, 0.1, 16)
    ub = b.local_train(b.init_params(), [0, 1], 3, 0.1, 16)
    assert all(torch.equal(x, y) for x, y in zip(ua, ub, strict=True))
    assert not torch.equal(make_trainer(digits, seed=4).init_params(), a.init_params())


def test_payload_is_four_bytes_per_parameter(digits):
    trainer = make_trainer(digits)
    assert trainer.payload_bytes == 4 * trainer.num_params == 4 * (64 * 32 + 32 + 32 * 10 + 10)


def test_small_clients_use_their_whole_data_per_step(digits):
    trainer = make_trainer(digits, n_clients=200)
    size = int(trainer.client_sizes[0])
    assert trainer.samples_per_step(0, 32) == size < 32
    assert len(trainer.draw_batch(0, 32)) == size


def test_fake_trainer_rises_towards_its_ceiling(digits):
    part = partition_iid(digits.train_y, 4, 10, np.random.default_rng(0))
    fake = FakeTrainer(FakeModel(kind="fake", max_accuracy=0.8), part, 10, RandomStreams(0))
    w = fake.init_params()
    assert fake.evaluate(w)[0] == pytest.approx(0.1)
    accuracies = []
    for _ in range(30):
        w = np.mean(fake.local_train(w, [0, 1, 2, 3], 5, 0.1, 32), axis=0)
        accuracies.append(fake.evaluate(w)[0])
    assert accuracies == sorted(accuracies) and 0.75 < accuracies[-1] <= 0.8


def test_a_clients_batches_do_not_depend_on_other_clients(digits):
    a, b = make_trainer(digits), make_trainer(digits)
    a.local_train(a.init_params(), [0, 1], 3, 0.1, 16)
    ua = a.local_train(a.init_params(), [2], 3, 0.1, 16)[0]
    ub = b.local_train(b.init_params(), [2, 3], 3, 0.1, 16)[0]
    a.local_train(a.init_params(), [3], 3, 0.1, 16)
    assert torch.equal(ua, ub)
