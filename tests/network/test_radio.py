"""Radio rate models at known distances (free space, TR 36.885 V2I, Shannon, shadowing)."""

import math

import numpy as np
import pytest

from netfl.network.radio import (
    AccessRadio,
    CorrelatedShadowing,
    free_space_path_loss_db,
    link_rate_bps,
    noise_power_dbm,
    propagation_delay_s,
    shannon_rate_bps,
    tr36885_v2i_path_loss_db,
)
from netfl.scenario.iov import ShannonRadio


def test_free_space_path_loss_at_known_points():
    # 2.4 GHz at 100 m: 20 log10(100) + 20 log10(2.4e9) - 147.55 = 80.05 dB
    assert free_space_path_loss_db(100.0, 2.4e9) == pytest.approx(80.05, abs=0.01)
    # doubling the distance adds 6.02 dB
    assert (free_space_path_loss_db(200.0, 5.9e9) - free_space_path_loss_db(100.0, 5.9e9)
            == pytest.approx(20 * math.log10(2)))


def test_tr36885_v2i_path_loss_at_known_points():
    assert tr36885_v2i_path_loss_db(1000.0) == pytest.approx(128.1)
    assert tr36885_v2i_path_loss_db(100.0) == pytest.approx(128.1 - 37.6)
    assert tr36885_v2i_path_loss_db(0.01) == tr36885_v2i_path_loss_db(1.0)  # floor at 1 m


def test_noise_and_shannon_rate():
    # 10 MHz, 9 dB noise figure: -174 + 70 + 9 = -95 dBm
    assert noise_power_dbm(10e6, 9.0) == pytest.approx(-95.0)
    assert shannon_rate_bps(10e6, 0.0) == pytest.approx(10e6)  # log2(1 + 1)
    assert shannon_rate_bps(10e6, 30.0, max_rate_bps=27e6) == 27e6


def test_link_rate_of_a_v2i_link_at_100_m():
    # 23 dBm, 10 MHz, 9 dB NF, 3 + 8 dBi antennas: P_rx = 23 + 11 - 90.5 = -56.5 dBm,
    # SNR = -56.5 + 95 = 38.5 dB
    rate = link_rate_bps(tr36885_v2i_path_loss_db(100.0), tx_power_dbm=23.0, bandwidth_hz=10e6,
                         noise_figure_db=9.0, tx_gain_db=3.0, rx_gain_db=8.0)
    assert rate == pytest.approx(10e6 * math.log2(1 + 10 ** 3.85), rel=1e-9)
    farther = link_rate_bps(tr36885_v2i_path_loss_db(400.0), tx_power_dbm=23.0,
                            bandwidth_hz=10e6, noise_figure_db=9.0)
    assert farther < rate


def test_correlated_shadowing_keeps_its_variance_and_decorrelates():
    rng = np.random.default_rng(0)
    near, far = [], []
    for _ in range(4000):
        s = CorrelatedShadowing(8.0, 50.0, rng)
        start = s.value_db
        near.append((start, s.step(5.0)))
        far.append((start, s.step(500.0)))
    near, far = np.array(near), np.array(far)
    assert near[:, 1].std() == pytest.approx(8.0, rel=0.05)
    assert np.corrcoef(near.T)[0, 1] == pytest.approx(math.exp(-5 / 50), abs=0.03)
    assert abs(np.corrcoef(far.T)[0, 1]) < 0.2  # rho applies to the step from 5 m on
    assert CorrelatedShadowing(0.0, 50.0, rng).step(10.0) == 0.0


def test_propagation_delay():
    assert propagation_delay_s(299_792.458) == pytest.approx(1e-3)


def test_a_practical_radio_reaches_a_fraction_of_shannon_and_no_more_than_its_best_mcs():
    # TR 36.942 A.2: 0.6 of the bound, at most 4.4 bit/s/Hz
    assert shannon_rate_bps(10e6, 10.0, implementation_factor=0.6) == pytest.approx(
        0.6 * 10e6 * math.log2(11.0))
    assert shannon_rate_bps(10e6, 40.0, implementation_factor=0.6,
                            max_spectral_efficiency=4.4) == pytest.approx(44e6)
    # the case: 30 m from the RSU, 10 MHz, was 236 Mbit/s (23.6 bit/s/Hz)
    radio = AccessRadio(ShannonRadio(kind="shannon", shadowing_std=0))
    up, down = radio.rates_bps(30.0)
    assert up == pytest.approx(44e6) and down == pytest.approx(44e6)
