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
    tr36942_macro_path_loss_db,
    winner_b1_los_path_loss_db,
    winner_b1_nlos_path_loss_db,
)
from netfl.scenario.iov import ShannonRadio


def test_free_space_path_loss_at_known_points():
    # 2.4 GHz at 100 m: 20 log10(100) + 20 log10(2.4e9) - 147.55 = 80.05 dB
    assert free_space_path_loss_db(100.0, 2.4e9) == pytest.approx(80.05, abs=0.01)
    # doubling the distance adds 6.02 dB
    assert (free_space_path_loss_db(200.0, 5.9e9) - free_space_path_loss_db(100.0, 5.9e9)
            == pytest.approx(20 * math.log10(2)))


def test_the_macro_law_is_tr36942s_with_its_frequency_term():
    # 2 GHz, 15 m above the rooftops: the familiar 128.1 + 37.6 log10(d_km)
    assert tr36942_macro_path_loss_db(1000.0, 2e9) == pytest.approx(128.1, abs=0.06)
    assert tr36942_macro_path_loss_db(100.0, 2e9) == pytest.approx(128.1 - 37.6, abs=0.06)
    # at 5.9 GHz its 21 log10(f) adds 9.9 dB (the finding)
    assert (tr36942_macro_path_loss_db(500.0, 5.9e9) - tr36942_macro_path_loss_db(500.0, 2e9)
            == pytest.approx(21 * math.log10(5.9 / 2)))
    # never less loss than free space (close in, the law would give less)
    assert tr36942_macro_path_loss_db(10.0, 5.9e9) == pytest.approx(
        free_space_path_loss_db(10.0, 5.9e9))


def test_winner_b1_los_at_known_points():
    f = 5.9e9
    # before the breakpoint (5 m RSU, 1.5 m vehicle: d'BP = 4 x 4 x 0.5 x f / c = 157 m)
    assert winner_b1_los_path_loss_db(100.0, f, 5.0, 1.5) == pytest.approx(
        22.7 * 2 + 27.0 + 20 * math.log10(5.9))
    bp = 4 * 4.0 * 0.5 * f / 299_792_458.0
    below = winner_b1_los_path_loss_db(bp * (1 - 1e-9), f, 5.0, 1.5)
    above = winner_b1_los_path_loss_db(bp * (1 + 1e-9), f, 5.0, 1.5)
    assert above == pytest.approx(below, abs=0.05)  # the two branches meet
    assert winner_b1_los_path_loss_db(400.0, f, 5.0, 1.5) == pytest.approx(
        40 * math.log10(400) + 7.56 - 17.3 * math.log10(4.0) - 17.3 * math.log10(0.5)
        + 2.7 * math.log10(5.9))
    # below 3 m: the loss at 3 m (4.2 dB below free space there, as the model is fitted)
    assert winner_b1_los_path_loss_db(1.0, f, 5, 1.5) == winner_b1_los_path_loss_db(3.0, f, 5, 1.5)
    assert free_space_path_loss_db(3.0, f) - winner_b1_los_path_loss_db(3.0, f, 5, 1.5) == (
        pytest.approx(4.16, abs=0.01))
    # the frequency is honoured
    assert winner_b1_los_path_loss_db(100.0, 28e9, 5, 1.5) > winner_b1_los_path_loss_db(
        100.0, 5.9e9, 5, 1.5) + 13


def test_the_old_path_loss_name_is_refused_with_what_to_use():
    with pytest.raises(ValueError, match="winner-b1-los"):
        ShannonRadio(kind="shannon", path_loss="tr36885-v2i")


def test_distances_are_3d_with_the_antenna_heights():
    radio = AccessRadio(ShannonRadio(kind="shannon", path_loss="free-space"))
    assert radio.path_loss_db(0.0) == pytest.approx(free_space_path_loss_db(3.5, 5.9e9))

def test_noise_and_shannon_rate():
    # 10 MHz, 9 dB noise figure: -174 + 70 + 9 = -95 dBm
    assert noise_power_dbm(10e6, 9.0) == pytest.approx(-95.0)
    assert shannon_rate_bps(10e6, 0.0) == pytest.approx(10e6)  # log2(1 + 1)
    assert shannon_rate_bps(10e6, 30.0, max_rate_bps=27e6) == 27e6


def test_link_rate_of_a_v2i_link_at_100_m():
    # 23 dBm, 10 MHz, 9 dB NF, 3 + 8 dBi antennas: P_rx = 23 + 11 - 90.55 = -56.55 dBm,
    # SNR = -56.55 + 95 = 38.45 dB
    loss = tr36942_macro_path_loss_db(100.0, 2e9)
    assert loss == pytest.approx(90.55, abs=0.01)
    rate = link_rate_bps(loss, tx_power_dbm=23.0, bandwidth_hz=10e6, noise_figure_db=9.0,
                         tx_gain_db=3.0, rx_gain_db=8.0)
    assert rate == pytest.approx(10e6 * math.log2(1 + 10 ** ((34 - loss + 95) / 10)), rel=1e-9)
    farther = link_rate_bps(tr36942_macro_path_loss_db(400.0, 2e9), tx_power_dbm=23.0,
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


def test_winner_b1_nlos_around_a_corner_at_a_known_point():
    # d1 = 100 m, d2 = 50 m at 5.9 GHz: PL_LOS(100) + 20 - 12.5 n + 10 n log10(50)
    # + 3 log10(5.9 / 5), n = max(2.8 - 0.24, 1.84) = 2.56; the other way round is larger
    los_100 = winner_b1_los_path_loss_db(100.0, 5.9e9, 5.0, 1.5)
    expected = los_100 + 20 - 12.5 * 2.56 + 25.6 * math.log10(50) + 3 * math.log10(1.18)
    assert winner_b1_nlos_path_loss_db(100.0, 50.0, 5.9e9, 5.0, 1.5) == pytest.approx(expected)
    assert winner_b1_nlos_path_loss_db(50.0, 100.0, 5.9e9, 5.0, 1.5) == pytest.approx(expected)


def test_manhattan_path_loss_is_los_along_the_rsus_streets_and_nlos_round_corners():
    radio = AccessRadio(ShannonRadio(kind="shannon", path_loss="winner-b1-manhattan"))
    los = AccessRadio(ShannonRadio(kind="shannon"))
    along = radio.path_loss_db(200.0, (200.0, 5.0))  # on the RSU's street (x axis)
    assert along == pytest.approx(los.path_loss_db(200.0))
    corner = radio.path_loss_db(math.hypot(150, 150), (150.0, -150.0))
    assert corner == pytest.approx(winner_b1_nlos_path_loss_db(150, 150, 5.9e9, 5.0, 1.5))
    assert corner > los.path_loss_db(math.hypot(150, 150)) + 25  # a building in the way
    assert radio.path_loss_db(200.0) == along  # without an offset: line of sight
