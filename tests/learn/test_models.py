import pytest
import torch

from netfl.learn.models import build_model, count_params, flops_per_sample
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
