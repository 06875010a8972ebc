"""Radio rate models, pure functions (docs/models/iov.md lists the sources).

Rates in bit/s, powers in dBm, gains and losses in dB, distances in metres, frequencies in Hz.

    rate = a * bandwidth * log2(1 + SNR) <= SE_max * bandwidth     (Shannon with TR 36.942's
           implementation factor a and maximum spectral efficiency; optionally capped)
    SNR = P_rx / N
    P_rx = P_tx + G_tx + G_rx - PL(d) - shadowing                   (dBm)
    N    = -174 dBm/Hz + 10 log10(bandwidth) + noise figure         (thermal noise at 290 K)

Path loss (d the 3-D distance in m, f in Hz, fc in GHz):
    free space:      PL = 20 log10(d) + 20 log10(f) - 147.55                   (Friis)
    WINNER+ B1 LOS:  PL = 22.7 log10(d) + 27.0 + 20 log10(fc)        d <= d'BP  (TR 36.885's
                     PL = 40 log10(d) + 7.56 - 17.3 log10(h'1 h'2) + 2.7 log10(fc)   V2V and
                     d'BP = 4 h'1 h'2 f / c, h' = h - 1 m, d >= 3 m          UE-type RSU model)
    WINNER+ B1 NLOS: around a corner of a Manhattan grid (winner_b1_nlos_path_loss_db)
    TR 36.942 macro: PL = 40 (1 - 4e-3 dh) log10(d_km) - 18 log10(dh) + 21 log10(f_MHz) + 80,
                     dh = 15 m above the rooftops: 128.1 + 37.6 log10(d_km) at 2 GHz;
                     never below free space

Shadowing: log-normal (Gaussian in dB) with standard deviation sigma, correlated along the path by
Gudmundson's exponential model, rho = exp(-distance moved / decorrelation distance): 3 dB and
10 m with WINNER+ B1 LOS (TR 36.885's V2V LOS value; 10 m is common practice), 8 dB and 50 m
with the macro law (TR 36.885's eNB-vehicle values).
"""

from __future__ import annotations

import math

import numpy as np

from netfl.network import dcf, satlink
from netfl.network.propagation import (  # noqa: F401 (re-exported: the radio's vocabulary)
    BOLTZMANN_DBW_PER_K_HZ,
    MIN_DISTANCE_M,
    SPEED_OF_LIGHT_MPS,
    THERMAL_NOISE_DBM_PER_HZ,
    free_space_path_loss_db,
)


def winner_b1_los_path_loss_db(distance_m: float, frequency_hz: float, height_a_m: float,
                               height_b_m: float) -> float:
    """WINNER+ B1 line-of-sight path loss between antennas at ``height_a_m`` and
    ``height_b_m`` over the 3-D ``distance_m`` (TR 36.885's model for V2V and for a UE-type RSU
    at 5.9 GHz): the loss at 3 m below 3 m, as TR 36.885 says. As fitted, it is below free
    space up to about 100 m at 5.9 GHz (4 dB at 3 m: the ground reflection of a street);
    netfl keeps it so."""
    d = max(distance_m, 3.0)
    fc_ghz = frequency_hz / 1e9
    h_a, h_b = max(height_a_m - 1.0, 0.1), max(height_b_m - 1.0, 0.1)  # effective heights
    breakpoint_m = 4.0 * h_a * h_b * frequency_hz / SPEED_OF_LIGHT_MPS
    if d <= breakpoint_m:
        loss = 22.7 * math.log10(d) + 27.0 + 20.0 * math.log10(fc_ghz)
    else:
        loss = (40.0 * math.log10(d) + 7.56 - 17.3 * math.log10(h_a) - 17.3 * math.log10(h_b)
                + 2.7 * math.log10(fc_ghz))
    return loss


def winner_b1_nlos_path_loss_db(d1_m: float, d2_m: float, frequency_hz: float,
                                height_a_m: float, height_b_m: float) -> float:
    """WINNER+ B1 non-line-of-sight path loss on a Manhattan grid (TR 36.885's model for V2V
    and a UE-type RSU around a corner): the two antennas on crossing streets, ``d1_m`` and
    ``d2_m`` from the crossing along each street,

        PL(dk, dl) = PL_LOS(dk) + 20 - 12.5 n + 10 n log10(dl) + 3 log10(fc / 5 GHz),
        n = max(2.8 - 0.0024 dk, 1.84),   PL = min(PL(d1, d2), PL(d2, d1))."""
    def around(dk: float, dl: float) -> float:
        n = max(2.8 - 0.0024 * dk, 1.84)
        return (winner_b1_los_path_loss_db(dk, frequency_hz, height_a_m, height_b_m) + 20.0
                - 12.5 * n + 10.0 * n * math.log10(max(dl, 3.0))
                + 3.0 * math.log10(frequency_hz / 5e9))
    return min(around(d1_m, d2_m), around(d2_m, d1_m))


def tr36942_macro_path_loss_db(distance_m: float, frequency_hz: float,
                               above_rooftop_m: float = 15.0) -> float:
    """3GPP TR 36.942 4.5.2 macro-cell path loss (a base station mast ``above_rooftop_m``
    above the rooftops), with its frequency term; 128.1 + 37.6 log10(d_km) at 2 GHz and 15 m.
    Never below free space."""
    d_km = max(distance_m, MIN_DISTANCE_M) / 1000.0
    loss = (40.0 * (1.0 - 4e-3 * above_rooftop_m) * math.log10(d_km)
            - 18.0 * math.log10(above_rooftop_m) + 21.0 * math.log10(frequency_hz / 1e6) + 80.0)
    return max(loss, free_space_path_loss_db(distance_m, frequency_hz))


def noise_power_dbm(bandwidth_hz: float, noise_figure_db: float) -> float:
    """Thermal noise over ``bandwidth_hz`` plus the receiver's noise figure."""
    return THERMAL_NOISE_DBM_PER_HZ + 10.0 * math.log10(bandwidth_hz) + noise_figure_db


def shannon_rate_bps(bandwidth_hz: float, snr_db: float, max_rate_bps: float | None = None,
                     implementation_factor: float = 1.0,
                     max_spectral_efficiency: float = math.inf) -> float:
    """implementation_factor * bandwidth * log2(1 + SNR), at most max_spectral_efficiency
    (bit/s/Hz) * bandwidth and ``max_rate_bps`` when given (3GPP TR 36.942, A.2: a practical
    radio reaches a fraction of Shannon's bound and no more than its best modulation)."""
    efficiency = min(implementation_factor * math.log2(1.0 + 10.0 ** (snr_db / 10.0)),
                     max_spectral_efficiency)
    rate = bandwidth_hz * efficiency
    return rate if max_rate_bps is None else min(rate, max_rate_bps)


def link_rate_bps(path_loss_db: float, *, tx_power_dbm: float, bandwidth_hz: float,
                  noise_figure_db: float, tx_gain_db: float = 0.0, rx_gain_db: float = 0.0,
                  shadowing_db: float = 0.0, max_rate_bps: float | None = None) -> float:
    """The Shannon rate of a link with the given path loss and shadowing."""
    received = tx_power_dbm + tx_gain_db + rx_gain_db - path_loss_db - shadowing_db
    snr = received - noise_power_dbm(bandwidth_hz, noise_figure_db)
    return shannon_rate_bps(bandwidth_hz, snr, max_rate_bps)


class CorrelatedShadowing:
    """Gudmundson shadowing along one path: each step of ``moved_m`` metres draws

        S' = rho S + sqrt(1 - rho^2) sigma N(0, 1),   rho = exp(-moved_m / decorrelation_m)

    so S stays N(0, sigma^2) at every point and decorrelates over ``decorrelation_m``."""

    def __init__(self, sigma_db: float, decorrelation_m: float, rng: np.random.Generator):
        self.sigma_db, self.decorrelation_m, self._rng = sigma_db, decorrelation_m, rng
        self.value_db = sigma_db * rng.standard_normal() if sigma_db > 0 else 0.0

    def step(self, moved_m: float) -> float:
        """Move ``moved_m`` metres; returns the new shadowing in dB."""
        if self.sigma_db <= 0:
            return 0.0
        rho = math.exp(-abs(moved_m) / self.decorrelation_m)
        self.value_db = (rho * self.value_db
                         + math.sqrt(1.0 - rho * rho) * self.sigma_db * self._rng.standard_normal())
        return self.value_db


def link_budget_rate_bps(distance_m: float, frequency_hz: float, bandwidth_hz: float,
                        eirp_dbm: float, g_over_t_db_k: float,
                        max_rate_bps: float | None = None, extra_loss_db: float = 0.0) -> float:
    """Shannon rate of a satellite link: C/N0 (``satlink.c_over_n0_dbhz``), SNR = C/N0 -
    10 log10(B)."""
    c_over_n0 = satlink.c_over_n0_dbhz(distance_m, frequency_hz, eirp_dbm, g_over_t_db_k,
                                       extra_loss_db)
    return shannon_rate_bps(bandwidth_hz, c_over_n0 - 10.0 * math.log10(bandwidth_hz),
                            max_rate_bps)


def propagation_delay_s(distance_m: float) -> float:
    """Distance over the speed of light."""
    return distance_m / SPEED_OF_LIGHT_MPS


class AccessRadio:
    """The rates of a client-edge link from a scenario's radio section: fixed; Shannon over
    the current distance with correlated shadowing (``world.radio`` of IoV: uplink vehicle ->
    RSU, downlink the other way); or a satellite link budget (``world.gsl`` of LEO:
    C/N0 = EIRP - FSPL + G/T - k, a budget per direction: ``satlink``). With ``dot11p``, the
    rates are 802.11p PHY rates: the fixed rate, or the highest the SNR allows (``dcf``)."""

    def __init__(self, spec, dot11p: bool = False, orbit_radius_m: float = 0.0,
                 weather=None):
        """``weather``: a link budget's WeatherModel (netfl.network.weather), where it has
        one."""
        self.spec, self.dot11p, self.weather = spec, dot11p, weather
        self.orbit_radius_m = orbit_radius_m  # a satellite's: for the elevation of a budget
        self.varies = spec.kind in ("shannon", "link-budget")
        if spec.kind == "shannon":  # the SNR in dB is these constants minus losses
            gains = spec.vehicle_antenna_gain + spec.rsu_antenna_gain
            self._up_db = (spec.vehicle_tx_power + gains
                           - noise_power_dbm(spec.bandwidth, spec.rsu_noise_figure))
            self._down_db = (spec.rsu_tx_power + gains
                             - noise_power_dbm(spec.bandwidth, spec.vehicle_noise_figure))

    def shadowing(self, rng: np.random.Generator) -> CorrelatedShadowing:
        shannon = self.spec.kind == "shannon"
        sigma = self.spec.shadowing_sigma_db() if shannon else 0.0
        decorrelation = self.spec.decorrelation_m() if shannon else 1.0
        return CorrelatedShadowing(sigma, decorrelation, rng)

    def path_loss_db(self, distance_m: float,
                     offset_xy: tuple[float, float] | None = None) -> float:
        """The loss over a ground distance of ``distance_m`` (3-D with the antenna heights).
        ``winner-b1-manhattan`` needs the vehicle's ``offset_xy`` from the RSU on the ground:
        line of sight while the vehicle is within half a street width of one of the RSU's
        street axes (x or y), else around the corner (B1 NLOS, d1 and d2 the offsets)."""
        spec = self.spec
        if spec.path_loss == "winner-b1-manhattan" and offset_xy is not None:
            dx, dy = abs(offset_xy[0]), abs(offset_xy[1])
            if min(dx, dy) >= spec.street_width / 2.0:
                return winner_b1_nlos_path_loss_db(dx, dy, spec.frequency, spec.rsu_height,
                                                   spec.vehicle_height)
        d = math.hypot(distance_m, spec.rsu_height - spec.vehicle_height)
        if spec.path_loss == "free-space":
            return free_space_path_loss_db(d, spec.frequency)
        if spec.path_loss == "tr36942-macro":
            return tr36942_macro_path_loss_db(d, spec.frequency)
        return winner_b1_los_path_loss_db(d, spec.frequency, spec.rsu_height,
                                          spec.vehicle_height)

    def coupling_db(self, distance_m: float, shadowing_db: float = 0.0,
                    offset_xy: tuple[float, float] | None = None) -> float:
        """Path loss and shadowing less both antennas' gains (the same both ways)."""
        spec = self.spec
        return (self.path_loss_db(distance_m, offset_xy) + shadowing_db
                - spec.vehicle_antenna_gain - spec.rsu_antenna_gain)

    def _budget_rate(self, direction, distance_m: float, latitude_deg: float = 0.0,
                     t: float = 0.0) -> float:
        """One direction of a satellite link budget (``satlink``) at slant ``distance_m``,
        with the weather over a ground site at ``latitude_deg`` at time ``t`` where the budget
        has one."""
        spec = self.spec
        loss = 0.0
        if spec.atmosphere > 0 or self.weather is not None:
            elevation = (satlink.elevation_from_range_deg(distance_m, self.orbit_radius_m)
                         if self.orbit_radius_m else 90.0)
            loss = (satlink.atmospheric_loss_db(spec.atmosphere, elevation)
                    if spec.atmosphere > 0 else
                    self.weather.loss_db(direction.frequency, elevation, latitude_deg, t))
        c_n0 = satlink.c_over_n0_dbhz(distance_m, direction.frequency, direction.eirp,
                                      direction.g_over_t, loss)
        if spec.rates == "shannon":
            rate = shannon_rate_bps(direction.bandwidth,
                                    c_n0 - 10.0 * math.log10(direction.bandwidth))
        else:
            rate = satlink.dvb_s2_rate_bps(c_n0, direction.bandwidth, spec.roll_off,
                                           spec.implementation_margin)
        return rate if spec.max_rate is None else min(rate, spec.max_rate)

    def rates_bps(self, distance_m: float, shadowing_db: float = 0.0,
                  offset_xy: tuple[float, float] | None = None, latitude_deg: float = 0.0,
                  t: float = 0.0) -> tuple[float, float]:
        """(uplink, downlink) rate at ``distance_m`` with ``shadowing_db`` of extra loss
        (``offset_xy``: see ``path_loss_db``; a link budget's weather over a ground site at
        ``latitude_deg`` at time ``t``)."""
        spec = self.spec
        if not self.varies:
            return spec.rate, spec.rate
        if spec.kind == "link-budget":
            return (self._budget_rate(spec.uplink, distance_m, latitude_deg, t),
                    self._budget_rate(spec.downlink, distance_m, latitude_deg, t))
        loss = self.path_loss_db(distance_m, offset_xy) + shadowing_db
        if self.dot11p:  # max_rate caps the rate chosen
            cap = math.inf if spec.max_rate is None else spec.max_rate
            return (dcf.rate_at_snr_bps(self._up_db - loss, spec.rsu_noise_figure, cap),
                    dcf.rate_at_snr_bps(self._down_db - loss, spec.vehicle_noise_figure, cap))
        limits = dict(max_rate_bps=spec.max_rate,
                      implementation_factor=spec.implementation_factor,
                      max_spectral_efficiency=spec.max_spectral_efficiency)
        return (shannon_rate_bps(spec.bandwidth, self._up_db - loss, **limits),
                shannon_rate_bps(spec.bandwidth, self._down_db - loss, **limits))
