"""Propagation constants and free-space loss, shared by the radio models (``radio.py``,
``satlink.py``)."""

from __future__ import annotations

import math

THERMAL_NOISE_DBM_PER_HZ = -174.0
SPEED_OF_LIGHT_MPS = 299_792_458.0
MIN_DISTANCE_M = 1.0  # path-loss models are not meant for shorter ranges
BOLTZMANN_DBW_PER_K_HZ = -228.6
MEAN_EARTH_RADIUS_M = 6_371_000.0  # a spherical Earth for elevations and beam cells


def free_space_path_loss_db(distance_m: float, frequency_hz: float) -> float:
    """Friis free-space path loss."""
    d = max(distance_m, MIN_DISTANCE_M)
    return 20.0 * math.log10(d) + 20.0 * math.log10(frequency_hz) - 147.55
