"""Orbits and ground geometry: elevation and slant range against closed forms, Walker shells and
presets, SGP4 records, TLE text both ways, sidereal time, TEME -> Earth-fixed, WGS84 sites and
scattering users over a spherical cap."""

import math
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from sgp4.api import WGS72, Satrec

from netfl.world import orbits
from netfl.world.orbits import (
    EARTH_RADIUS_KM,
    MEAN_EARTH_RADIUS_KM,
    MU_KM3_S2,
    PRESETS,
    WGS84_A_KM,
    WGS84_F,
    WalkerShell,
    elevation_deg,
    gmst_rad,
    mean_motion_rad_min,
    parse_tle,
    positions_ecef,
    scatter_sites,
    site_ecef,
    site_up,
    slant_range_km,
    tle_text,
    walker_elements,
    walker_satrecs,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
POLAR_RADIUS_KM = WGS84_A_KM * (1 - WGS84_F)


def geometry(sat_km, lat, lon, alt_m=0.0):
    """(elevation deg, slant range km) of a satellite seen from a WGS84 site."""
    site = site_ecef(lat, lon, alt_m)
    return (float(elevation_deg(np.asarray(sat_km), site, site_up(lat, lon))),
            float(slant_range_km(np.asarray(sat_km), site)))


# ------------------------------------------------------------------------ sites and geometry


def test_sites_on_the_wgs84_ellipsoid():
    assert site_ecef(0.0, 0.0) == pytest.approx([WGS84_A_KM, 0.0, 0.0], abs=1e-9)
    assert site_ecef(0.0, 90.0) == pytest.approx([0.0, WGS84_A_KM, 0.0], abs=1e-9)
    assert site_ecef(90.0, 0.0) == pytest.approx([0.0, 0.0, POLAR_RADIUS_KM], abs=1e-9)
    assert site_ecef(-90.0, 33.0) == pytest.approx([0.0, 0.0, -POLAR_RADIUS_KM], abs=1e-9)
    # altitude goes along the vertical, in metres
    assert site_ecef(0.0, 0.0, 2500.0) == pytest.approx([WGS84_A_KM + 2.5, 0.0, 0.0])
    # every point satisfies (x^2 + y^2) / a^2 + z^2 / b^2 = 1, and the vertical is the normal
    lat, lon = np.array([-70.0, -12.5, 33.3, 45.0, 89.0]), np.array([-170.0, 5.0, 60.0, 116.4,
                                                                     -3.0])
    p = site_ecef(lat, lon)
    assert (p[:, 0] ** 2 + p[:, 1] ** 2) / WGS84_A_KM ** 2 + p[:, 2] ** 2 / POLAR_RADIUS_KM ** 2 \
        == pytest.approx(np.ones(5))
    up = site_up(lat, lon)
    gradient = np.column_stack([p[:, 0] / WGS84_A_KM ** 2, p[:, 1] / WGS84_A_KM ** 2,
                                p[:, 2] / POLAR_RADIUS_KM ** 2])
    gradient /= np.linalg.norm(gradient, axis=1)[:, None]
    assert np.linalg.norm(up, axis=1) == pytest.approx(np.ones(5))
    assert up == pytest.approx(gradient, abs=1e-12)


@pytest.mark.parametrize("lat, lon, alt_m", [(0.0, 0.0, 0.0), (90.0, 0.0, 0.0),
                                              (-90.0, 0.0, 0.0), (39.9, 116.4, 0.0),
                                              (-45.0, 170.0, 2500.0), (60.0, -120.0, 300.0)])
@pytest.mark.parametrize("altitude_km", [550.0, 1015.0])
def test_a_satellite_straight_above_a_site_is_at_90_deg_and_its_altitude_away(
        lat, lon, alt_m, altitude_km):
    # straight above = along the site's WGS84 vertical, altitude_km above the site
    sat = site_ecef(lat, lon, alt_m + altitude_km * 1000.0)
    slant = float(slant_range_km(sat, site_ecef(lat, lon, alt_m)))
    assert slant == pytest.approx(altitude_km, rel=1e-12)
    d = sat - site_ecef(lat, lon, alt_m)
    assert d @ site_up(lat, lon) / np.linalg.norm(d) == pytest.approx(1.0, abs=1e-12)
    # 1 m off the vertical: 90 deg less 1 m / h radians (exactly overhead, see the next test)
    east = np.array([-math.sin(math.radians(lon)), math.cos(math.radians(lon)), 0.0])
    elevation, _ = geometry(sat + east * 1e-3, lat, lon, alt_m)
    assert elevation == pytest.approx(90.0 - math.degrees(1e-3 / altitude_km), abs=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_elevation_straight_overhead_is_90_not_nan():
    rng = np.random.default_rng(0)
    lat, lon = rng.uniform(-90, 90, 200), rng.uniform(-180, 180, 200)
    alt = rng.uniform(0, 3000, 200)
    elevation = elevation_deg(site_ecef(lat, lon, alt + 550e3), site_ecef(lat, lon, alt),
                              site_up(lat, lon))
    assert elevation == pytest.approx(np.full(200, 90.0), abs=1e-5)


@pytest.mark.parametrize("along", [1.0, 500.0, 3000.0])
def test_a_point_on_the_horizon_plane_is_at_0_deg_and_below_it_negative(along):
    # at (lat 0, lon 0) the vertical is +x: the horizon plane is x = a
    elevation, slant = geometry([WGS84_A_KM, along * 0.6, along * 0.8], 0.0, 0.0)
    assert elevation == pytest.approx(0.0, abs=1e-9)
    assert slant == pytest.approx(along)
    below, _ = geometry([WGS84_A_KM - along * math.tan(math.radians(5)), along, 0.0], 0.0, 0.0)
    assert below == pytest.approx(-5.0)
    # at the north pole the vertical is +z
    elevation, _ = geometry([along, 0.0, POLAR_RADIUS_KM], 90.0, 0.0)
    assert elevation == pytest.approx(0.0, abs=1e-9)


def spherical_slant_km(radius_km: float, altitude_km: float, elevation: float) -> float:
    """d = sqrt((R + h)^2 - R^2 cos^2 E) - R sin E."""
    e = math.radians(elevation)
    return (math.sqrt((radius_km + altitude_km) ** 2 - radius_km ** 2 * math.cos(e) ** 2)
            - radius_km * math.sin(e))


@pytest.mark.parametrize("elevation", [0.0, 5.0, 10.0, 25.0, 40.0, 60.0, 75.0, 89.5])
@pytest.mark.parametrize("where", ["equator", "north-pole", "south-pole", "equator-at-2-km"])
def test_slant_range_at_elevation_matches_the_spherical_closed_form(elevation, where):
    # where the geocentric direction and the WGS84 vertical coincide (equator, poles), a
    # satellite at geocentric radius R + h and central angle theta from the site sits at
    # elevation E with theta = acos(R cos E / (R + h)) - E; R is the site's geocentric radius
    h = 550.0
    lat, alt_m = {"equator": (0.0, 0.0), "north-pole": (90.0, 0.0),
                  "south-pole": (-90.0, 0.0), "equator-at-2-km": (0.0, 2000.0)}[where]
    radius = float(np.linalg.norm(site_ecef(lat, 30.0, alt_m)))
    assert radius == pytest.approx((POLAR_RADIUS_KM if lat else WGS84_A_KM) + alt_m / 1000.0)
    theta = math.acos(radius * math.cos(math.radians(elevation)) / (radius + h)) - math.radians(
        elevation)
    up = site_up(lat, 30.0)
    side = np.cross(up, [0.0, 0.0, 1.0]) if lat == 0 else np.array([1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    sat = (radius + h) * (math.cos(theta) * up + math.sin(theta) * side)
    elev, slant = geometry(sat, lat, 30.0, alt_m)
    assert elev == pytest.approx(elevation, abs=1e-7)
    assert slant == pytest.approx(spherical_slant_km(radius, h, elevation), rel=1e-9)


def test_the_closed_form_slant_range_bounds():
    # overhead the slant range is h; at the horizon sqrt((R + h)^2 - R^2) (for Starlink ~2700 km)
    assert spherical_slant_km(6378.137, 550.0, 90.0) == pytest.approx(550.0)
    assert spherical_slant_km(6378.137, 550.0, 0.0) == pytest.approx(
        math.sqrt(6928.137 ** 2 - 6378.137 ** 2))
    assert 2600 < spherical_slant_km(6378.137, 550.0, 0.0) < 2800


def test_elevation_broadcasts_over_satellites_and_sites():
    sites = np.array([[0.0, 0.0], [90.0, 0.0]])
    pos, up = site_ecef(sites[:, 0], sites[:, 1]), site_up(sites[:, 0], sites[:, 1])
    sats = np.stack([site_ecef(0.0, 0.0, 5e5), site_ecef(90.0, 0.0, 5e5)])
    grid = elevation_deg(sats[:, None, :], pos[None, :, :], up[None, :, :])
    assert grid.shape == (2, 2)
    assert grid[0, 0] == pytest.approx(90.0) and grid[1, 1] == pytest.approx(90.0)
    assert grid[0, 1] < 0 and grid[1, 0] < 0  # the other site's satellite is below its horizon
    assert slant_range_km(sats[:, None, :], pos[None, :, :]).shape == (2, 2)


# ------------------------------------------------------------------------ Walker shells


def test_presets_totals():
    totals = {name: shell.total for name, shell in PRESETS.items()}
    assert totals == {"starlink-shell1": 1584, "kuiper": 1156, "telesat": 351,
                      "walker-40-5": 40}
    starlink = PRESETS["starlink-shell1"]
    assert (starlink.altitude_km, starlink.inclination_deg, starlink.planes,
            starlink.per_plane) == (550.0, 53.0, 72, 22)
    assert PRESETS["walker-40-5"] == WalkerShell(500.0, 80.0, 5, 8, 1)


@pytest.mark.parametrize("shell", [WalkerShell(500.0, 80.0, 5, 8, 1),
                                   WalkerShell(600.0, 60.0, 12, 10, 5),
                                   WalkerShell(550.0, 53.0, 72, 22, 1),
                                   WalkerShell(700.0, 90.0, 3, 4, 0)],
                         ids=["40-5-1", "120-12-5", "starlink", "12-3-0"])
def test_walker_element_layout(shell):
    elements = walker_elements(shell)
    assert len(elements) == shell.total
    assert [(p, s) for p, s, _, _ in elements] == [
        (p, s) for p in range(shell.planes) for s in range(shell.per_plane)]
    table = {(p, s): (raan, anomaly) for p, s, raan, anomaly in elements}
    step_raan, step_slot = 360.0 / shell.planes, 360.0 / shell.per_plane
    phase = 360.0 * shell.phasing / shell.total

    def gap(a, b):
        return (b - a) % 360.0

    for p in range(shell.planes):
        for s in range(shell.per_plane):
            raan, anomaly = table[p, s]
            assert 0 <= raan < 360 and 0 <= anomaly < 360
            assert raan == pytest.approx(p * step_raan)  # planes evenly spaced in RAAN
            if s + 1 < shell.per_plane:  # slots evenly spaced in a plane
                assert gap(anomaly, table[p, s + 1][1]) == pytest.approx(step_slot)
            if p + 1 < shell.planes:  # the next plane is ahead by F x 360 / T
                assert gap(anomaly, table[p + 1, s][1]) == pytest.approx(phase % 360.0, abs=1e-9)
    assert table[0, 0] == (0.0, 0.0)


def test_walker_shell_40_5_1_by_hand():
    elements = {(p, s): (raan, m) for p, s, raan, m in walker_elements(PRESETS["walker-40-5"])}
    assert elements[1, 0] == pytest.approx((72.0, 9.0))
    assert elements[4, 7] == pytest.approx((288.0, (315.0 + 36.0) % 360.0))
    assert elements[2, 3] == pytest.approx((144.0, 135.0 + 18.0))


def test_mean_motion_of_a_circular_orbit():
    # Kepler: T = 2 pi sqrt(a^3 / mu); at 550 km that is about 95.6 minutes
    n = mean_motion_rad_min(550.0)
    period_min = 2 * math.pi / n
    assert period_min == pytest.approx(
        2 * math.pi * math.sqrt((EARTH_RADIUS_KM + 550.0) ** 3 / MU_KM3_S2) / 60.0)
    assert 95.4 < period_min < 95.8
    assert mean_motion_rad_min(1015.0) < mean_motion_rad_min(500.0)


def test_walker_satrecs_carry_the_elements_and_fly_circular_orbits():
    shell = WalkerShell(550.0, 53.0, 4, 6, 1)
    sats = walker_satrecs(shell, START)
    assert [s.satnum for s in sats] == list(range(1, 25))
    jd = sats[0].jdsatepoch + sats[0].jdsatepochF
    assert jd == pytest.approx(2461041.5, abs=1e-9)  # 2026-01-01 00:00 UTC
    for sat, (_, _, raan, anomaly) in zip(sats, walker_elements(shell), strict=True):
        assert sat.ecco == 0.0 and sat.bstar == 0.0
        assert math.degrees(sat.inclo) == pytest.approx(53.0)
        assert math.degrees(sat.nodeo) == pytest.approx(raan)
        assert math.degrees(sat.mo) == pytest.approx(anomaly)
        assert sat.no_kozai == pytest.approx(mean_motion_rad_min(550.0))
    seconds = np.arange(0.0, 6000.0, 300.0)
    r = positions_ecef(sats, START, seconds)
    assert r.shape == (24, len(seconds), 3)
    radius = np.linalg.norm(r, axis=2)
    # SGP4 mean elements: the osculating radius stays within J2's ~10 km of a = R + h
    assert np.all(np.abs(radius - (EARTH_RADIUS_KM + 550.0)) < 15.0)
    # the inclination caps the latitude
    lat = np.degrees(np.arcsin(r[..., 2] / radius))
    assert lat.max() <= 53.2 and lat.max() > 50.0
    # in-plane neighbours are 360 / 6 = 60 deg apart along the orbit
    a, b = r[0, 0], r[1, 0]
    assert math.degrees(math.acos(a @ b / np.linalg.norm(a) / np.linalg.norm(b))) == (
        pytest.approx(60.0, abs=0.5))
    # the orbit repeats after one period (in inertial space; Earth-fixed it drifts west)
    period_s = 2 * math.pi / mean_motion_rad_min(550.0) * 60.0
    again = positions_ecef(sats[:1], START, np.array([0.0, period_s]))[0]
    assert np.linalg.norm(again[0]) == pytest.approx(np.linalg.norm(again[1]), abs=2.0)


def test_satellites_at_the_epoch_sit_at_their_raan_and_anomaly():
    # argument of perigee 0 and mean anomaly 0: at the ascending node, on the equator, at
    # longitude RAAN - GMST; a quarter orbit later at the top of the orbit (latitude = i)
    shell = WalkerShell(550.0, 53.0, 4, 4, 1)
    sats = walker_satrecs(shell, START)
    jd, fr = orbits.julian_dates(START, np.array([0.0]))
    gmst = math.degrees(gmst_rad(jd, fr)[0])
    for k in (0, 4, 8, 12):  # slot 0 of each plane: anomaly F p 360 / T, small
        sat = sats[k]
        r = positions_ecef([sat], START, np.array([0.0]))[0, 0]
        m = math.degrees(sat.mo)
        # on the circular orbit, the argument of latitude is the mean anomaly
        lat = math.degrees(math.asin(math.sin(math.radians(53.0)) * math.sin(math.radians(m))))
        assert math.degrees(math.asin(r[2] / np.linalg.norm(r))) == pytest.approx(lat, abs=0.2)
        if m == 0.0:
            lon = (math.degrees(sat.nodeo) - gmst + 180.0) % 360.0 - 180.0
            assert math.degrees(math.atan2(r[1], r[0])) == pytest.approx(lon, abs=0.2)


def test_positions_of_a_decayed_orbit_raise():
    sat = Satrec()
    sat.sgp4init(WGS72, "i", 1, 27000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9, 0.0,
                 mean_motion_rad_min(-500.0), 0.0)  # below the surface
    with pytest.raises(ValueError, match="SGP4 error"):
        positions_ecef([sat], START, np.array([0.0, 60.0]))


# ------------------------------------------------------------------------ sidereal time, frames


def test_gmst_matches_vallados_example():
    # Vallado, Fundamentals of Astrodynamics, Example 3-5: 1992 August 20, 12:14 UT1
    # (JD 2448855.009722) has GMST = 152.578787886 deg (IAU-82)
    jd, fr = orbits.julian_dates(datetime(1992, 8, 20, 12, 14, tzinfo=UTC), np.array([0.0]))
    assert math.degrees(gmst_rad(jd, fr)[0]) == pytest.approx(152.578787886, abs=1e-5)


def test_gmst_advances_one_turn_per_sidereal_day():
    jd, fr = orbits.julian_dates(START, np.array([0.0, 86164.0905, 43082.04525]))
    g = np.degrees(gmst_rad(jd, fr))
    assert (g[1] - g[0] + 180.0) % 360.0 - 180.0 == pytest.approx(0.0, abs=1e-4)
    assert (g[2] - g[0]) % 360.0 == pytest.approx(180.0, abs=1e-4)


def test_julian_dates_keep_the_fraction_small():
    jd, fr = orbits.julian_dates(START, np.array([0.0, 43200.0, 86400.0 * 3 + 10.0]))
    assert np.all((fr >= 0) & (fr < 1))
    assert jd + fr == pytest.approx([2461041.5, 2461042.0, 2461044.5 + 10 / 86400], abs=1e-9)
    # a zone-aware epoch is taken in UTC
    plus_one = datetime(2026, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=1)))
    jd2, fr2 = orbits.julian_dates(plus_one, np.array([0.0]))
    assert jd2[0] + fr2[0] == pytest.approx(2461041.5, abs=1e-9)


def test_gmst_and_earth_fixed_positions_agree_with_skyfield():
    sf = pytest.importorskip("skyfield.api")
    ts = sf.load.timescale(builtin=True)
    for when in (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 7, 4, 18, 30, tzinfo=UTC)):
        jd, fr = orbits.julian_dates(when, np.array([0.0]))
        t_ut1 = ts.ut1_jd(float(jd[0] + fr[0]))
        assert math.degrees(gmst_rad(jd, fr)[0]) == pytest.approx(t_ut1.gmst * 15.0, abs=1e-4)
    shell = WalkerShell(550.0, 53.0, 3, 2, 1)
    sats = walker_satrecs(shell, START)
    text = tle_text([f"S{k}" for k in range(len(sats))], sats).splitlines()
    seconds = np.array([0.0, 1234.5, 7200.0])
    ours = positions_ecef([rec for _, rec in parse_tle("\n".join(text))], START, seconds)
    from skyfield.framelib import itrs

    for k in range(len(sats)):
        sat = sf.EarthSatellite(text[3 * k + 1], text[3 * k + 2], f"S{k}", ts)
        for j, s in enumerate(seconds):
            t = ts.from_datetime(START + timedelta(seconds=float(s)))
            theirs = sat.at(t).frame_xyz(itrs).km
            assert np.linalg.norm(ours[k, j] - theirs) < 0.5  # km (UT1 - UTC, frame details)


# ------------------------------------------------------------------------ TLE text


def test_tle_round_trip_keeps_names_and_elements():
    shell = WalkerShell(600.0, 60.0, 12, 10, 5)
    sats = walker_satrecs(shell, START)
    names = [f"NETFL-P{k // 10:02d}S{k % 10:02d}" for k in range(len(sats))]
    text = tle_text(names, sats)
    lines = text.splitlines()
    assert len(lines) == 3 * len(sats) and text.endswith("\n")
    assert lines[0] == "0 NETFL-P00S00"
    assert lines[1].startswith("1 00001") and lines[2].startswith("2 00001")
    assert all(len(line) == 69 for k, line in enumerate(lines) if k % 3)
    for line in (line for k, line in enumerate(lines) if k % 3):  # modulo-10 checksums
        digits = sum(int(c) if c.isdigit() else (1 if c == "-" else 0) for c in line[:68])
        assert digits % 10 == int(line[68])
    parsed = parse_tle(text)
    assert [name for name, _ in parsed] == names
    for (_, back), sat in zip(parsed, sats, strict=True):
        assert back.satnum == sat.satnum
        assert back.jdsatepoch + back.jdsatepochF == pytest.approx(
            sat.jdsatepoch + sat.jdsatepochF, abs=1e-8)
        for field in ("inclo", "nodeo", "mo", "argpo"):  # 4 decimals of a degree
            assert abs(getattr(back, field) - getattr(sat, field)) % (2 * math.pi) < 2e-6
        assert back.no_kozai == pytest.approx(sat.no_kozai, rel=1e-8)
        assert back.ecco == pytest.approx(sat.ecco, abs=1e-7)
    seconds = np.linspace(0.0, 6 * 3600.0, 7)
    gap = np.linalg.norm(positions_ecef([s for _, s in parsed], START, seconds)
                         - positions_ecef(sats, START, seconds), axis=2)
    assert gap.max() < 1.0  # km: TLE rounding only


def test_parse_two_line_text_without_names_and_name_lines_without_zero():
    sats = walker_satrecs(PRESETS["walker-40-5"], START)[:3]
    lines = tle_text(["A", "B", "C"], sats).splitlines()
    two_line = "\n".join(line for k, line in enumerate(lines) if k % 3)
    parsed = parse_tle(two_line)
    assert [name for name, _ in parsed] == ["sat-1", "sat-2", "sat-3"]
    plain_names = "\n\n".join(line[2:] if k % 3 == 0 else line + "   "
                              for k, line in enumerate(lines)) + "\n\n"
    assert [name for name, _ in parse_tle(plain_names)] == ["A", "B", "C"]
    # 3LE and 2LE records mixed, blank lines, CRLF line ends
    mixed = "\r\n".join([lines[0], lines[1], lines[2], "", lines[4], lines[5]])
    assert [name for name, _ in parse_tle(mixed)] == ["A", "sat-2"]


@pytest.fixture
def tle_lines():
    return tle_text(["A", "B"], walker_satrecs(PRESETS["walker-40-5"], START)[:2]).splitlines()


@pytest.mark.parametrize("case, line, what", [
    ("missing line 2", 5, "expected TLE line 1 then line 2"),
    ("a name at the end", 7, "a name line without its two TLE lines"),
    ("lines swapped", 2, "expected TLE line 1 then line 2"),
    ("an orphan line 2", 1, "a name line without its two TLE lines"),
])
def test_parse_errors_name_the_source_and_line(tle_lines, case, line, what):
    text = {
        "missing line 2": tle_lines[:5],
        "a name at the end": tle_lines + ["0 C"],
        "lines swapped": [tle_lines[0], tle_lines[2], tle_lines[1]],
        "an orphan line 2": [tle_lines[2]],
    }[case]
    with pytest.raises(ValueError, match=rf"^sats\.tle:{line}: {what}"):
        parse_tle("\n".join(text), source="sats.tle")


def test_parse_errors_count_blank_lines_and_empty_text_has_no_satellites(tle_lines):
    with pytest.raises(ValueError, match=r"^f:6: a name line"):
        parse_tle("\n".join(tle_lines[:3] + ["", "", "0 LONELY"]), source="f")
    with pytest.raises(ValueError, match=r"^f: no satellites found"):
        parse_tle("\n \n", source="f")


@pytest.mark.parametrize("field", ["inclination", "mean motion"])
def test_a_corrupted_element_field_is_a_parse_error_naming_the_line(tle_lines, field):
    bad = {"inclination": tle_lines[2].replace(" 80.0000", " 8x.0000"),
           "mean motion": tle_lines[2][:52] + "abcdefghijk" + tle_lines[2][63:]}[field]
    with pytest.raises(ValueError, match=r"^sats\.tle:[23]: "):
        parse_tle("\n".join([tle_lines[0], tle_lines[1], bad]), source="sats.tle")


# ------------------------------------------------------------------------ scattering users


def great_circle_km(lat1, lon1, lat2, lon2):
    p1, p2, dl = np.radians(lat1), np.radians(lat2), np.radians(np.asarray(lon2) - lon1)
    c = np.sin(p1) * np.sin(p2) + np.cos(p1) * np.cos(p2) * np.cos(dl)
    return MEAN_EARTH_RADIUS_KM * np.arccos(np.clip(c, -1.0, 1.0))


@pytest.mark.parametrize("lat, lon, radius", [(39.9, 116.4, 500.0), (0.0, 179.9, 300.0),
                                              (89.5, -60.0, 200.0), (-60.0, -179.5, 1000.0),
                                              (10.0, 10.0, 3000.0)])
def test_scatter_sites_stay_within_the_radius(lat, lon, radius):
    points = scatter_sites(2000, lat, lon, radius, np.random.default_rng(7))
    assert points.shape == (2000, 2)
    assert np.all(np.abs(points[:, 0]) <= 90) and np.all(np.abs(points[:, 1]) <= 180)
    distance = great_circle_km(lat, lon, points[:, 0], points[:, 1])
    assert distance.max() <= radius * (1 + 1e-9)
    assert distance.max() > 0.9 * radius  # and fill it
    # uniform over the cap's area: a quarter (flat approximation) within half the radius
    cap = 1 - math.cos(radius / MEAN_EARTH_RADIUS_KM)
    inner = (1 - math.cos(radius / 2 / MEAN_EARTH_RADIUS_KM)) / cap
    assert np.mean(distance <= radius / 2) == pytest.approx(inner, abs=0.04)


def test_scatter_sites_follow_the_generator():
    a = scatter_sites(5, 10.0, 20.0, 100.0, np.random.default_rng(3))
    b = scatter_sites(5, 10.0, 20.0, 100.0, np.random.default_rng(3))
    c = scatter_sites(5, 10.0, 20.0, 100.0, np.random.default_rng(4))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def with_checksum(line: str) -> str:
    body = line[:68]
    return body + str(sum(int(c) if c.isdigit() else c == "-" for c in body) % 10)


def test_a_line_that_fails_its_checksum_is_named(tle_lines):
    last = tle_lines[2][68]
    bad = tle_lines[2][:68] + str((int(last) + 1) % 10)
    with pytest.raises(ValueError, match=r"^sats\.tle:3: TLE line 2 fails its checksum"):
        parse_tle("\n".join([tle_lines[0], tle_lines[1], bad]), source="sats.tle")


@pytest.mark.parametrize("columns, value, what", [
    ((8, 16), "999.0000", "inclination 999 deg"),
    ((52, 63), " 0.00000100", "mean motion 1e-06 rev/day"),
    ((52, 63), "16.00000000"[:11], None),  # about 280 km: low but possible, accepted
    ((52, 63), "16.99000000"[:11], "perigee 13 km"),
    ((52, 63), "17.90000000"[:11], "mean motion 17.9 rev/day"),
])
def test_elements_that_are_no_orbit_are_refused(tle_lines, columns, value, what):
    """A near-zero mean motion or an inclination of 999 deg gave 49k meaningless windows
    both parse, so they are checked for physics."""
    a, b = columns
    line2 = with_checksum(tle_lines[2][:a] + value + tle_lines[2][b:])
    text = "\n".join([tle_lines[0], tle_lines[1], line2])
    if what is None:
        assert len(parse_tle(text)) == 1
        return
    with pytest.raises(ValueError, match=rf"^sats\.tle:2: {what}"):
        parse_tle(text, source="sats.tle")
