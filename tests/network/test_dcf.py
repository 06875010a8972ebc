"""802.11p airtime and Bianchi's DCF model (netfl/network/dcf.py): pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netfl.network import dcf
from netfl.scenario.iov import DOT11P_RATES_BPS


def test_frame_durations_follow_the_ofdm_symbol_arithmetic():
    # 1500 B of IP + 36 B of MAC at 6 Mbit/s (48 bits a symbol): 257 symbols of 8 us + 40 us
    assert dcf.frame_airtime_s(1536, 6e6) == pytest.approx(2096e-6)
    assert dcf.frame_airtime_s(dcf.MAC_ACK_BYTES, 6e6) == pytest.approx(64e-6)  # 3 symbols
    assert dcf.frame_airtime_s(dcf.MAC_ACK_BYTES, 3e6) == pytest.approx(88e-6)  # 6 symbols
    # one exchange: AIFS (32 + 2 x 13 us), data, SIFS, ACK
    assert dcf.exchange_s(1500, 6e6, 2) == pytest.approx((58 + 2096 + 32 + 64) * 1e-6)


def test_acknowledgements_go_at_the_highest_mandatory_rate_not_above_the_data_rate():
    assert [dcf.control_rate_bps(r) for r in (3e6, 4.5e6, 9e6, 18e6, 27e6)] == [
        3e6, 3e6, 6e6, 12e6, 12e6]


def test_one_station_waits_half_the_minimum_window_on_average():
    tau, p = dcf.transmit_probability(1, 15, 1023)
    assert tau == pytest.approx(2 / 17) and p == 0
    assert dcf.contention_per_frame_s(1, 2e-3) == pytest.approx(7.5 * dcf.SLOT_S)
    assert dcf.contention_per_frame_s(0, 2e-3) == 0


def test_bianchi_fixed_point_holds_and_contention_grows_with_stations():
    costs = []
    for n in (2, 5, 10, 30):
        tau, p = dcf.transmit_probability(n, 15, 1023)
        assert p == pytest.approx(1 - (1 - tau) ** (n - 1))
        w, m = 16, 6
        assert tau == pytest.approx(2 / (1 + w + p * w * sum((2 * p) ** k for k in range(m))))
        costs.append(dcf.contention_per_frame_s(n, 2.2e-3))
    assert costs == sorted(costs) and costs[0] > 7.5 * dcf.SLOT_S
    # Bianchi's Fig. 6 region: 10 stations, W = 32, m = 3 collide about 1/3 of the time
    assert dcf.transmit_probability(10, 31, 255)[1] == pytest.approx(0.33, abs=0.04)


@given(st.floats(-20, 60), st.floats(0, 15))
def test_the_rate_grows_with_the_snr_and_is_an_80211p_rate(snr, noise_figure):
    rate = dcf.rate_at_snr_bps(snr, noise_figure)
    assert rate == 0 or rate in dcf.RATES_BPS
    assert dcf.rate_at_snr_bps(snr + 3, noise_figure) >= rate


def test_rate_thresholds_are_the_standards_sensitivities():
    # a receiver with the standard's 10 dB noise figure: 3 Mbit/s from -85 dBm (SNR 9 dB)
    assert dcf.SNR_THRESHOLDS_DB[0] == pytest.approx(9.0)
    assert dcf.rate_at_snr_bps(8.9, 10) == 0 and dcf.rate_at_snr_bps(9.0, 10) == 3e6
    assert dcf.rate_at_snr_bps(26.0, 10) == 27e6 and dcf.rate_at_snr_bps(25.9, 10) == 24e6


def test_the_scenario_schema_knows_the_same_rates():
    assert DOT11P_RATES_BPS == dcf.RATES_BPS
