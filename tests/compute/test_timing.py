import math
import typing

import numpy as np
import pytest

from netfl.compute.device import PRESETS, resolve_profile
from netfl.compute.timing import aggregation_time_s, jitter_factor, pick_stragglers, train_time_s
from netfl.scenario.sections import DevicePreset, DeviceSpec


def test_train_time_is_training_flops_over_throughput():
    # 3 MFLOP of training per sample, 100 samples, 1 GFLOP/s: 3e6 * 100 / 1e9 = 0.3 s
    assert train_time_s(3e6, 100, 1e9) == pytest.approx(0.3)
    assert train_time_s(3e6, 100, 1e9, slowdown=4, jitter=0.5) == pytest.approx(0.6)


def test_aggregation_time():
    assert aggregation_time_s(1000, 5, 1e6) == pytest.approx(2 * 1000 * 5 / 1e6)


def test_jitter_is_lognormal_with_median_one():
    rng = np.random.default_rng(1)
    draws = np.array([jitter_factor(rng, 0.3) for _ in range(20000)])
    assert np.median(draws) == pytest.approx(1.0, abs=0.02)
    assert draws.mean() == pytest.approx(math.exp(0.3**2 / 2), abs=0.02)
    assert jitter_factor(rng, 0.0) == 1.0


def test_stragglers_are_an_exact_fraction():
    mask = pick_stragglers(np.random.default_rng(0), 50, 0.2)
    assert mask.sum() == 10


def test_schema_presets_match_the_table():
    assert set(typing.get_args(DevicePreset)) == set(PRESETS)


def test_overrides_win_over_the_preset():
    profile = resolve_profile(DeviceSpec(preset="phone", flops=2e9))
    assert profile.flops == 2e9 and profile.memory_bytes == PRESETS["phone"].memory_bytes
    assert resolve_profile(DeviceSpec(flops=5e9)).flops == 5e9
