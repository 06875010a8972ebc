"""IEEE 802.11p airtime: OFDM frame durations in a 10 MHz channel, the DCF's contention cost
(Bianchi's model) and the rate chosen at a given SNR. Pure functions (docs/models/iov.md).

Times in seconds, sizes in bytes, rates in bit/s, SNRs in dB.

* **Frame duration** (IEEE 802.11-2016, 17.4.3, half-clocked for 10 MHz): a 32 us preamble and
  an 8 us SIGNAL symbol, then ceil((16 service + 8 * bytes + 6 tail bits) / bits per symbol)
  symbols of 8 us.
* **One exchange**: AIFS (SIFS + AIFSN slots), the data frame, SIFS, the MAC acknowledgement
  (14 bytes, at the highest mandatory rate not above the data rate: 3, 6 or 12 Mbit/s).
* **Contention** (Bianchi, "Performance analysis of the IEEE 802.11 distributed coordination
  function", IEEE JSAC 18(3), 2000): n saturated stations, each transmitting in a slot with
  probability tau, colliding with probability p = 1 - (1 - tau)^(n - 1), with

      tau = 2 / (1 + W + p W sum_{k<m} (2p)^k),   W = CWmin + 1,   CWmax + 1 = 2^m W;

  the idle slots and collisions spent per successful frame are
  ((1 - P_tr) slot + P_tr (1 - P_s) T_c) / (P_tr P_s), with P_tr = 1 - (1 - tau)^n and
  P_s = n tau (1 - tau)^(n - 1) / P_tr. With one station this is the mean back-off, CWmin / 2
  slots.
* **Rate at an SNR**: the highest rate whose minimum sensitivity (IEEE 802.11-2016 Table 17-18,
  10 MHz column) the received power meets; the table assumes a 10 dB noise figure, so each rate
  needs the SNR ``sensitivity - (-174 + 10 log10(10 MHz) + 10)`` over thermal noise plus the
  receiver's own noise figure.
"""

from __future__ import annotations

import math
from functools import lru_cache

SLOT_S = 13e-6
SIFS_S = 32e-6
PREAMBLE_S = 40e-6  # preamble (32 us) and SIGNAL (8 us) at 10 MHz
SYMBOL_S = 8e-6
SERVICE_BITS, TAIL_BITS = 16, 6
MAC_DATA_OVERHEAD_BYTES = 36  # MAC header 24, LLC/SNAP 8, FCS 4
MAC_ACK_BYTES = 14

RATES_BPS = (3e6, 4.5e6, 6e6, 9e6, 12e6, 18e6, 24e6, 27e6)
MANDATORY_RATES_BPS = (3e6, 6e6, 12e6)
SENSITIVITY_DBM = (-85.0, -84.0, -82.0, -80.0, -77.0, -73.0, -69.0, -68.0)
_STANDARD_NOISE_DBM = -174.0 + 10.0 * math.log10(10e6) + 10.0  # the table's noise floor
SNR_THRESHOLDS_DB = tuple(s - _STANDARD_NOISE_DBM for s in SENSITIVITY_DBM)  # 9 .. 26 dB


def frame_airtime_s(nbytes: float, rate_bps: float) -> float:
    """The duration of one OFDM frame of ``nbytes`` (MAC header included) at ``rate_bps``."""
    bits_per_symbol = rate_bps * SYMBOL_S
    symbols = math.ceil((SERVICE_BITS + 8.0 * nbytes + TAIL_BITS) / bits_per_symbol - 1e-9)
    return PREAMBLE_S + SYMBOL_S * symbols


def control_rate_bps(rate_bps: float) -> float:
    """The rate of the MAC acknowledgement of a frame sent at ``rate_bps``."""
    return max((r for r in MANDATORY_RATES_BPS if r <= rate_bps), default=MANDATORY_RATES_BPS[0])


def aifs_s(aifsn: int) -> float:
    return SIFS_S + aifsn * SLOT_S


@lru_cache(maxsize=4096)
def exchange_s(ip_bytes: float, rate_bps: float, aifsn: int) -> float:
    """AIFS, a data frame carrying ``ip_bytes`` of IP packet, SIFS and the MAC ACK."""
    ack = frame_airtime_s(MAC_ACK_BYTES, control_rate_bps(rate_bps))
    return (aifs_s(aifsn) + frame_airtime_s(ip_bytes + MAC_DATA_OVERHEAD_BYTES, rate_bps)
            + SIFS_S + ack)


def retry_stages(cw_min: int, cw_max: int) -> int:
    """m with CWmax + 1 = 2^m (CWmin + 1)."""
    return max(round(math.log2((cw_max + 1) / (cw_min + 1))), 0)


@lru_cache(maxsize=4096)  # a cell asks for the same few station counts over and over
def transmit_probability(stations: int, cw_min: int, cw_max: int) -> tuple[float, float]:
    """(tau, p) of Bianchi's fixed point for ``stations`` saturated stations (bisection: the
    fixed-point residual grows with tau, so the root is unique)."""
    if stations < 1:
        raise ValueError(f"stations must be >= 1, got {stations}")
    w, m = cw_min + 1, retry_stages(cw_min, cw_max)

    def residual(tau: float) -> float:
        p = 1.0 - (1.0 - tau) ** (stations - 1)
        return tau - 2.0 / (1.0 + w + p * w * sum((2.0 * p) ** k for k in range(m)))

    low, high = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (low + high)
        if residual(mid) > 0:
            high = mid
        else:
            low = mid
    tau = 0.5 * (low + high)
    return tau, 1.0 - (1.0 - tau) ** (stations - 1)


def contention_per_frame_s(stations: int, collision_s: float, cw_min: int = 15,
                           cw_max: int = 1023) -> float:
    """Idle back-off slots and collisions spent per successful frame among ``stations``
    saturated stations (0 for none); ``collision_s``: the airtime a collision wastes."""
    if stations < 1:
        return 0.0
    tau, _ = transmit_probability(stations, cw_min, cw_max)
    busy = 1.0 - (1.0 - tau) ** stations
    success = stations * tau * (1.0 - tau) ** (stations - 1) / busy
    return ((1.0 - busy) * SLOT_S + busy * (1.0 - success) * collision_s) / (busy * success)


def rate_at_snr_bps(snr_db: float, noise_figure_db: float, max_rate_bps: float = math.inf
                    ) -> float:
    """The highest 802.11p rate (at most ``max_rate_bps``) a receiver with ``noise_figure_db``
    decodes at ``snr_db`` (over thermal noise plus that noise figure); 0 below the lowest
    rate's threshold."""
    margin = snr_db + noise_figure_db - 10.0  # the SNR the standard's 10 dB receiver would see
    best = 0.0
    for rate, threshold in zip(RATES_BPS, SNR_THRESHOLDS_DB, strict=True):
        if margin >= threshold and rate <= max_rate_bps:
            best = rate
    return best
