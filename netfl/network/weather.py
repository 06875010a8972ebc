"""Rain and gas attenuation of an Earth-space path: pure functions (docs/models/leo.md).

* Rain: ITU-R P.838-3's specific attenuation gamma_R = k R^alpha (dB/km) with its k and alpha
  regressions in frequency (horizontal and vertical, combined for the path's elevation and the
  polarisation tilt tau: 45 deg for circular), and ITU-R P.618-13 Sec. 2.2.1.1's path: the slant
  length below the rain height, its horizontal reduction and vertical adjustment factors, and
  the attenuation exceeded for p% of an average year from the one exceeded for 0.01%.
* Rain height: ITU-R P.839's h_R = h_0 + 0.36 km, h_0 from the ITU's isotherm map (2.45 km in
  London); netfl has no map, so a scenario gives h_R (its site's value from P.839-4).
* Gas: ITU-R P.676-12 Annex 2's slant path for a standard atmosphere (1013.25 hPa, 288.15 K,
  7.5 g/m^3), (gamma_o h_o + gamma_w h_w) / sin(elevation): its zenith values at 11.7, 12 and
  14.25 GHz, interpolated between (0.057-0.074 dB: small beside rain).

``rain_attenuation_db`` with the rain rate of the moment in place of R_0.01 gives the
attenuation of that rate on the path (netfl's use for a rain-rate series: an engineering
reading, not an ITU method, which predicts statistics); ``rain_attenuation_exceeded_db`` is
P.618's statistic itself.
"""

from __future__ import annotations

import bisect
import math

import pandas as pd

from netfl.errors import ScenarioError, ScenarioProblem

# P.838-3, Table 1-4: (a_j, b_j, c_j) then (m, c) for log10 k_H, log10 k_V, alpha_H, alpha_V
_K_H = ([(-5.33980, -0.10008, 1.13098), (-0.35351, 1.26970, 0.45400),
         (-0.23789, 0.86036, 0.15354), (-0.94158, 0.64552, 0.16817)], (-0.18961, 0.71147))
_K_V = ([(-3.80595, 0.56934, 0.81061), (-3.44965, -0.22911, 0.51059),
         (-0.39902, 0.73042, 0.11899), (0.50167, 1.07319, 0.27195)], (-0.16398, 0.63297))
_A_H = ([(-0.14318, 1.82442, -0.55187), (0.29591, 0.77564, 0.19822),
         (0.32177, 0.63773, 0.13164), (-5.37610, -0.96230, 1.47828),
         (16.1721, -3.29980, 3.43990)], (0.67849, -1.95537))
_A_V = ([(-0.07771, 2.33840, -0.76284), (0.56727, 0.95545, 0.54039),
         (-0.20238, 1.14520, 0.26809), (-48.2991, 0.791669, 0.116226),
         (48.5833, 0.791459, 0.116479)], (-0.053739, 0.83433))

EFFECTIVE_EARTH_RADIUS_KM = 8500.0  # P.618's R_e
# P.676-12 Annex 2, standard atmosphere: zenith gaseous attenuation (dB) at Ku band
_ZENITH_GAS_DB = ((11.7, 0.0574), (12.0, 0.0589), (14.25, 0.0735))


def _regression(table, log_f: float) -> float:
    terms, (m, c) = table
    return sum(a * math.exp(-(((log_f - b) / w) ** 2)) for a, b, w in terms) + m * log_f + c


def rain_coefficients(frequency_ghz: float, elevation_deg: float,
                      tilt_deg: float = 45.0) -> tuple[float, float]:
    """P.838-3's (k, alpha) at ``frequency_ghz`` (1-1000 GHz) for a path at ``elevation_deg``
    with polarisation tilt ``tilt_deg`` (0 horizontal, 90 vertical, 45 circular)."""
    if not 1.0 <= frequency_ghz <= 1000.0:
        raise ValueError(f"P.838 covers 1-1000 GHz, not {frequency_ghz:g}")
    log_f = math.log10(frequency_ghz)
    k_h, k_v = 10 ** _regression(_K_H, log_f), 10 ** _regression(_K_V, log_f)
    a_h, a_v = _regression(_A_H, log_f), _regression(_A_V, log_f)
    mix = math.cos(math.radians(elevation_deg)) ** 2 * math.cos(math.radians(2 * tilt_deg))
    k = (k_h + k_v + (k_h - k_v) * mix) / 2.0
    alpha = (k_h * a_h + k_v * a_v + (k_h * a_h - k_v * a_v) * mix) / (2.0 * k)
    return k, alpha


def rain_attenuation_db(rate_mm_h: float, frequency_ghz: float, elevation_deg: float,
                        latitude_deg: float, rain_height: float, station_height_km: float = 0.0,
                        tilt_deg: float = 45.0) -> float:
    """P.618-13 Sec. 2.2.1.1, steps 2-9, with ``rate_mm_h`` as R_0.01: the rain attenuation
    (dB) of an Earth-space path at ``elevation_deg`` from a station at ``latitude_deg`` and
    ``station_height_km`` under rain up to ``rain_height`` (km). 0 without rain, or with the
    station above the rain."""
    if rate_mm_h < 0:
        raise ValueError(f"a rain rate is >= 0, got {rate_mm_h!r}")
    depth = rain_height - station_height_km
    if rate_mm_h == 0 or depth <= 0:
        return 0.0
    theta = math.radians(elevation_deg)
    if elevation_deg >= 5.0:
        slant = depth / math.sin(theta)
    else:
        slant = 2.0 * depth / (math.sqrt(math.sin(theta) ** 2
                                         + 2.0 * depth / EFFECTIVE_EARTH_RADIUS_KM)
                               + math.sin(theta))
    ground = slant * math.cos(theta)
    k, alpha = rain_coefficients(frequency_ghz, elevation_deg, tilt_deg)
    gamma = k * rate_mm_h ** alpha
    reduction = 1.0 / (1.0 + 0.78 * math.sqrt(ground * gamma / frequency_ghz)
                       - 0.38 * (1.0 - math.exp(-2.0 * ground)))
    zeta = math.degrees(math.atan2(depth, ground * reduction))
    path = ground * reduction / math.cos(theta) if zeta > elevation_deg else slant
    chi = 36.0 - abs(latitude_deg) if abs(latitude_deg) < 36.0 else 0.0
    adjustment = 1.0 / (1.0 + math.sqrt(math.sin(theta)) * (
        31.0 * (1.0 - math.exp(-elevation_deg / (1.0 + chi)))
        * math.sqrt(path * gamma) / frequency_ghz ** 2 - 0.45))
    return gamma * path * adjustment


def rain_attenuation_exceeded_db(p_percent: float, rate_001_mm_h: float, frequency_ghz: float,
                                 elevation_deg: float, latitude_deg: float, rain_height: float,
                                 station_height_km: float = 0.0,
                                 tilt_deg: float = 45.0) -> float:
    """P.618-13 Sec. 2.2.1.1, step 10: the rain attenuation (dB) exceeded for ``p_percent``
    (0.001-5) of an average year where ``rate_001_mm_h`` is the rain rate exceeded for
    0.01%."""
    if not 0.001 <= p_percent <= 5.0:
        raise ValueError(f"P.618's rain method covers 0.001-5% of the time, not {p_percent:g}%")
    a001 = rain_attenuation_db(rate_001_mm_h, frequency_ghz, elevation_deg, latitude_deg,
                               rain_height, station_height_km, tilt_deg)
    if a001 <= 0:
        return 0.0
    lat, sin_theta = abs(latitude_deg), math.sin(math.radians(elevation_deg))
    if p_percent >= 1.0 or lat >= 36.0:
        beta = 0.0
    elif elevation_deg >= 25.0:
        beta = -0.005 * (lat - 36.0)
    else:
        beta = -0.005 * (lat - 36.0) + 1.8 - 4.25 * sin_theta
    exponent = -(0.655 + 0.033 * math.log(p_percent) - 0.045 * math.log(a001)
                 - beta * (1.0 - p_percent) * sin_theta)
    return max(a001 * (p_percent / 0.01) ** exponent, 0.0)


def gas_attenuation_db(frequency_ghz: float, elevation_deg: float) -> float:
    """P.676-12 Annex 2's gaseous attenuation (dB) of a slant path at ``elevation_deg`` (5-90
    deg) through a standard atmosphere, at ``frequency_ghz`` (11.7-14.25 GHz, Ku's user
    downlink and uplink: its zenith values interpolated)."""
    lo, hi = _ZENITH_GAS_DB[0][0], _ZENITH_GAS_DB[-1][0]
    if not lo <= frequency_ghz <= hi:
        raise ValueError(f"netfl's gas table covers {lo:g}-{hi:g} GHz, not {frequency_ghz:g}")
    if not 5.0 <= elevation_deg <= 90.0:
        raise ValueError(f"P.676's slant approximation covers 5-90 deg, not {elevation_deg:g}")
    for (f0, z0), (f1, z1) in zip(_ZENITH_GAS_DB, _ZENITH_GAS_DB[1:], strict=False):
        if f0 <= frequency_ghz <= f1:
            zenith = z0 + (z1 - z0) * (frequency_ghz - f0) / (f1 - f0)
            return zenith / math.sin(math.radians(elevation_deg))
    raise AssertionError("unreachable")


class WeatherModel:
    """A link budget's ``weather`` section at run time: the loss (dB) of one direction of a
    ground-satellite link, at its frequency and elevation, over a ground site's latitude, at
    simulated time ``t`` (the rain rate then: constant, or the series' row at or before t)."""

    def __init__(self, spec, times_s=(), rates_mm_h=()):
        self.spec = spec
        self._times = list(times_s)
        self._rates = list(rates_mm_h)

    def rain_rate(self, t: float) -> float:
        rain = self.spec.rain
        if rain is None:
            return 0.0
        if rain.rate is not None:
            return rain.rate
        i = bisect.bisect_right(self._times, t) - 1
        return self._rates[i] if i >= 0 else 0.0

    def loss_db(self, frequency_hz: float, elevation_deg: float, latitude_deg: float,
                t: float, station_height_km: float = 0.0) -> float:
        """Gas (at an elevation of at least 5 deg: P.676's approximation's floor) and rain."""
        f, loss = frequency_hz / 1e9, 0.0
        if self.spec.gas:
            loss += gas_attenuation_db(f, max(elevation_deg, 5.0))
        rain, rate = self.spec.rain, self.rain_rate(t)
        if rain is not None and rate > 0 and elevation_deg > 0:
            loss += rain_attenuation_db(rate, f, elevation_deg, latitude_deg,
                                        rain.height / 1000.0, station_height_km, rain.tilt_deg)
        return loss


def weather_model(spec) -> WeatherModel:
    """The run-time model of a ``weather`` section, its rain series read (errors name the file,
    the row and the column)."""
    rain = spec.rain
    if rain is None or rain.series is None:
        return WeatherModel(spec)
    path = rain.series

    def fail(message: str) -> ScenarioError:
        return ScenarioError([ScenarioProblem("world.gsl.weather.rain.series", message,
                                              has_value=False, source=str(path))])

    try:
        table = pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 (any reader error is the file's problem)
        raise fail(f"cannot be read as a CSV table: {exc}") from None
    missing = [c for c in ("time_s", "rate_mm_h") if c not in table.columns]
    if missing:
        raise fail(f"has no column {', '.join(missing)} (it has "
                   f"{', '.join(map(str, table.columns))})")
    times = pd.to_numeric(table["time_s"], errors="coerce").to_numpy(float)
    rates = pd.to_numeric(table["rate_mm_h"], errors="coerce").to_numpy(float)
    for row, (t, r) in enumerate(zip(times, rates, strict=True)):
        if not (math.isfinite(t) and t >= 0):
            raise fail(f"row {row + 2}: time_s = {table['time_s'].iloc[row]!r} is not a time "
                       f">= 0 s")
        if not (math.isfinite(r) and r >= 0):
            raise fail(f"row {row + 2}: rate_mm_h = {table['rate_mm_h'].iloc[row]!r} is not a "
                       f"rain rate >= 0")
        if row and t <= times[row - 1]:
            raise fail(f"row {row + 2}: time_s {t:g} does not come after {times[row - 1]:g}")
    return WeatherModel(spec, times, rates)
