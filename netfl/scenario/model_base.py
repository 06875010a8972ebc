"""What every real (PyTorch) model section shares: :class:`TorchModel`, the base of netfl's own
models and of a model plug-in's Spec (netfl.scenario.models re-exports it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt

from netfl.scenario.types import Section


class TorchModel(Section):
    """Fields of every real (PyTorch) model: where training runs on the host, and how.

    device: cpu, or cuda where asked and present (falls back to cpu, with a warning, where not).
    trainer: auto picks the faster path by the measured rule in docs/models/learning.md
    (vectorized over clients for models without convolutions on CPU, a loop otherwise).
    threads: torch's intra-op threads for the run. 1 (the default, and what every sweep run
    uses) gives the same results on every machine and executor; more can be faster on one run
    of a large MLP, but torch then splits float sums by thread count, so results match only
    runs with the same count.
    train_flops_per_sample: what the device model charges a training sample (see its field).
    """

    device: Literal["cpu", "cuda"] = "cpu"
    trainer: Literal["auto", "vmap", "loop"] = "auto"
    threads: PositiveInt = 1
    train_flops_per_sample: PositiveFloat | None = Field(
        None, description="training FLOPs a sample charged to the device model (and to "
        "Group-FEL's eq. (5) cost) instead of the model's counted ones: a stand-in for a "
        "costlier model's training time while this one learns (default: counted)")
