"""What every real (PyTorch) model section shares: :class:`TorchModel`, the base of netfl's own
models and of a model plug-in's Spec (netfl.scenario.models re-exports it)."""

from __future__ import annotations

from typing import Literal

from pydantic import PositiveInt

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
    """

    device: Literal["cpu", "cuda"] = "cpu"
    trainer: Literal["auto", "vmap", "loop"] = "auto"
    threads: PositiveInt = 1
