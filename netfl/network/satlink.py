"""Ground-satellite link rates: a budget per direction, DVB-S2's MODCOD table, atmospheric loss.
Pure functions (docs/models/leo.md).

    C/N0  = EIRP - FSPL(d, f) - L_atm + G/T + 228.6        dB-Hz (EIRP in dBW)
    Es/N0 = C/N0 - 10 log10(Rs),   Rs = B / (1 + roll-off)   (symbol rate of the carrier)
    rate  = eta(MODCOD) * Rs, the MODCOD the highest whose Es/N0 threshold plus the
            implementation margin the link meets (ETSI EN 302 307-1 Table 13: quasi-error-free,
            normal frames, AWGN); 0 below QPSK 1/4
    L_atm = zenith loss / sin(elevation)                      (a flat-layer cosecant law)

The elevation follows from the slant range d and the satellite's orbital radius r on a
spherical Earth of radius R: sin(el) = (r^2 - R^2 - d^2) / (2 R d).
"""

from __future__ import annotations

import math

from netfl.network.propagation import (
    BOLTZMANN_DBW_PER_K_HZ,
    MEAN_EARTH_RADIUS_M,
    free_space_path_loss_db,
)

# (MODCOD, spectral efficiency in bit/symbol, ideal Es/N0 in dB), ETSI EN 302 307-1 Table 13
DVB_S2_MODCODS: tuple[tuple[str, float, float], ...] = (
    ("QPSK 1/4", 0.490243, -2.35), ("QPSK 1/3", 0.656448, -1.24),
    ("QPSK 2/5", 0.789412, -0.30), ("QPSK 1/2", 0.988858, 1.00),
    ("QPSK 3/5", 1.188304, 2.23), ("QPSK 2/3", 1.322253, 3.10),
    ("QPSK 3/4", 1.487473, 4.03), ("QPSK 4/5", 1.587196, 4.68),
    ("QPSK 5/6", 1.654663, 5.18), ("QPSK 8/9", 1.766451, 6.20),
    ("QPSK 9/10", 1.788612, 6.42), ("8PSK 3/5", 1.779991, 5.50),
    ("8PSK 2/3", 1.980636, 6.62), ("8PSK 3/4", 2.228124, 7.91),
    ("8PSK 5/6", 2.478562, 9.35), ("8PSK 8/9", 2.646012, 10.69),
    ("8PSK 9/10", 2.679207, 10.98), ("16APSK 2/3", 2.637201, 8.97),
    ("16APSK 3/4", 2.966728, 10.21), ("16APSK 4/5", 3.165623, 11.03),
    ("16APSK 5/6", 3.300184, 11.61), ("16APSK 8/9", 3.523143, 12.89),
    ("16APSK 9/10", 3.567342, 13.13), ("32APSK 3/4", 3.703295, 12.73),
    ("32APSK 4/5", 3.951571, 13.64), ("32APSK 5/6", 4.119540, 14.28),
    ("32APSK 8/9", 4.397854, 15.69), ("32APSK 9/10", 4.453027, 16.05),
)


def c_over_n0_dbhz(distance_m: float, frequency_hz: float, eirp_dbm: float,
                   g_over_t_db_k: float, extra_loss_db: float = 0.0) -> float:
    """Carrier to noise density of a link (dB-Hz)."""
    return ((eirp_dbm - 30.0) - free_space_path_loss_db(distance_m, frequency_hz)
            - extra_loss_db + g_over_t_db_k - BOLTZMANN_DBW_PER_K_HZ)


def best_modcod(esn0_db: float, margin_db: float = 0.0) -> tuple[str, float] | None:
    """The most efficient MODCOD whose threshold plus ``margin_db`` is at most ``esn0_db``:
    (name, bit/symbol), or None below every threshold."""
    usable = [(eta, name) for name, eta, need in DVB_S2_MODCODS if need + margin_db <= esn0_db]
    if not usable:
        return None
    eta, name = max(usable)
    return name, eta


def dvb_s2_rate_bps(c_over_n0: float, bandwidth_hz: float, roll_off: float = 0.2,
                    margin_db: float = 0.0) -> float:
    """The information rate of a DVB-S2 carrier filling ``bandwidth_hz`` at C/N0 (dB-Hz)."""
    symbol_rate = bandwidth_hz / (1.0 + roll_off)
    chosen = best_modcod(c_over_n0 - 10.0 * math.log10(symbol_rate), margin_db)
    return 0.0 if chosen is None else chosen[1] * symbol_rate


def elevation_from_range_deg(slant_m: float, orbit_radius_m: float,
                             earth_radius_m: float = MEAN_EARTH_RADIUS_M) -> float:
    """A satellite's elevation (deg) seen from the ground at slant range ``slant_m``."""
    sine = (orbit_radius_m**2 - earth_radius_m**2 - slant_m**2) / (2.0 * earth_radius_m
                                                                    * slant_m)
    return math.degrees(math.asin(max(-1.0, min(1.0, sine))))


def atmospheric_loss_db(zenith_db: float, elevation_deg: float) -> float:
    """``zenith_db`` of gas and rain loss at zenith, along the slant path (cosecant law, with
    the elevation held at 5 deg or more, where a flat layer stops being a fair picture)."""
    return zenith_db / math.sin(math.radians(max(elevation_deg, 5.0)))
