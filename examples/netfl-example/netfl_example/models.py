"""A model extension: an MLP with residual blocks (Spec + build)."""

from __future__ import annotations

import math

from pydantic import PositiveInt
from torch import nn

from netfl.scenario.sections import TorchModel


class ResidualMlpSpec(TorchModel):
    """width: hidden units; blocks: residual blocks of two linear layers each."""

    kind: str
    width: PositiveInt = 128
    blocks: PositiveInt = 2


class _Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))

    def forward(self, x):
        return nn.functional.relu(x + self.layers(x))


class ResidualMlp:
    Spec = ResidualMlpSpec

    @staticmethod
    def build(spec: ResidualMlpSpec, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
        return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), spec.width),
                             nn.ReLU(), *[_Block(spec.width) for _ in range(spec.blocks)],
                             nn.Linear(spec.width, num_classes))
