import pytest
import torch

from netfl.learn.models import build_model, count_params, flops_per_sample, train_flops_per_sample
from netfl.scenario.sections import LogisticModel, MlpModel


def test_mlp_flops_are_two_macs_per_weight():
    model = build_model(MlpModel(kind="mlp", hidden=[32, 16]), (8, 8), 10)
    assert flops_per_sample(model, (8, 8)) == 2 * (64 * 32 + 32 * 16 + 16 * 10)
    assert count_params(model) == 64 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10


def test_conv_flops_hand_count():
    # 3x3 conv, 1 -> 4 channels, 8x8 input, padding 1: 8*8*4 outputs x 9 MACs x 2.
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1))
    assert flops_per_sample(model, (1, 8, 8)) == 2 * 9 * 8 * 8 * 4


def test_logistic():
    model = build_model(LogisticModel(kind="logistic"), (64,), 10)
    assert count_params(model) == 650 and flops_per_sample(model, (64,)) == pytest.approx(1280)


def test_mlp_training_flops_by_hand():
    # forward 2 MACs per weight; backward 2 MACs per weight for the weights' gradient, and 2 more
    # for the input gradient of every layer but the first (its input is data)
    model = build_model(MlpModel(kind="mlp", hidden=[32, 16]), (8, 8), 10)
    first, rest = 64 * 32, 32 * 16 + 16 * 10
    assert train_flops_per_sample(model, (8, 8)) == 2 * first * 2 + 2 * rest * 3


def test_fed_chs_mlp_training_flops_are_not_three_forward_passes():
    # the 784-200-200-10 MLP: the first layer is 79% of the work and needs no input gradient
    model = build_model(MlpModel(kind="mlp"), (1, 28, 28), 10)
    ratio = train_flops_per_sample(model, (1, 28, 28)) / flops_per_sample(model, (1, 28, 28))
    assert ratio == pytest.approx(879_200 / 397_600)
    assert 3 / ratio == pytest.approx(1.357, abs=1e-3)  # what three forward passes overcharged


def test_training_flops_leave_model_and_random_state_untouched():
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4),
                                torch.nn.Dropout(0.5), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 10)).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(3)
    state = torch.random.get_rng_state()
    flops = train_flops_per_sample(model, (1, 8, 8))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert not model.training and all(torch.equal(before[k], v)
                                      for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    # conv: forward and weight gradient only (no input gradient); linear: all three
    assert flops == 2 * 9 * 6 * 6 * 4 * 2 + 2 * 144 * 10 * 3


def test_a_charged_training_cost_replaces_the_counted_one_and_leaves_learning_alone(tiny):
    """model.train_flops_per_sample on a real model: the device model (and Group-FEL's eq. (5))
    charge it, the model learns as before (a costlier model's time, this one's learning)."""
    import netfl

    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["algorithm"]["rounds"] = 2
    plain = netfl.run(tiny, write=False).summary
    tiny["model"]["train_flops_per_sample"] = 10_000 * plain["train_flops_per_sample"]
    charged = netfl.run(tiny, write=False).summary
    assert charged["train_flops_per_sample"] == 10_000 * plain["train_flops_per_sample"]
    assert charged["final_accuracy"] == plain["final_accuracy"]
    assert charged["sim_time_s"] > 2 * plain["sim_time_s"]
