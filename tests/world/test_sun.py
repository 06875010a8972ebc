"""The Sun and the Earth's shadow against closed forms and an independent ephemeris."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.world.sun import (
    EARTH_RADIUS_KM,
    critical_beta_deg,
    eclipse_fraction_circular,
    sun_position_ecef,
    sun_position_teme,
    sunlight_fraction,
)


def circular_orbit(altitude_km: float, beta_deg: float, samples: int) -> np.ndarray:
    """Positions (samples, 3) over one period of a circular orbit whose plane makes beta with
    the Sun's direction, the Sun along +x (far away)."""
    radius = EARTH_RADIUS_KM + altitude_km
    u = np.linspace(0.0, 2 * np.pi, samples, endpoint=False)
    beta = math.radians(beta_deg)
    # the orbit's normal tilted beta from the y-z plane towards the Sun: the Sun's direction is
    # beta above the orbit plane
    normal = np.array([math.sin(beta), 0.0, math.cos(beta)])
    first = np.array([math.cos(beta), 0.0, -math.sin(beta)])
    second = np.cross(normal, first)
    return radius * (np.cos(u)[:, None] * first + np.sin(u)[:, None] * second)


SUN = np.array([1.496e8, 0.0, 0.0])


def test_the_closed_form_at_550_km():
    assert eclipse_fraction_circular(550, 0) == pytest.approx(0.3723, abs=5e-4)
    assert critical_beta_deg(550) == pytest.approx(67.0, abs=0.05)
    assert eclipse_fraction_circular(550, 67.5) == 0.0
    assert eclipse_fraction_circular(550, -30) == eclipse_fraction_circular(550, 30)


@pytest.mark.parametrize("beta", [0.0, 20.0, 45.0, 60.0, 66.0, 68.0, 85.0])
def test_the_vectorized_cylindrical_shadow_matches_the_closed_form(beta):
    samples = 200_000
    positions = circular_orbit(550, beta, samples)
    dark = 1.0 - sunlight_fraction(positions, SUN, "cylindrical").mean()
    expected = eclipse_fraction_circular(550, beta)
    error = dark - expected
    print(f"beta {beta:4.1f} deg: eclipse fraction {dark:.5f}, closed form {expected:.5f}, "
          f"error {error:+.1e}")
    assert abs(error) <= 2.0 / samples + 1e-9


def test_the_conical_shadow_has_an_umbra_inside_the_cylinder_and_a_thin_penumbra():
    samples = 200_000
    positions = circular_orbit(550, 0.0, samples)
    cylindrical = 1.0 - sunlight_fraction(positions, SUN, "cylindrical")
    conical = 1.0 - sunlight_fraction(positions, SUN, "conical")
    umbra = (conical == 1.0).mean()
    penumbra = ((conical > 0) & (conical < 1)).mean()
    period_s = 2 * math.pi * math.sqrt((EARTH_RADIUS_KM + 550) ** 3 / 398600.4418)
    print(f"cylinder {cylindrical.mean():.5f}, umbra {umbra:.5f}, penumbra {penumbra:.5f} "
          f"({penumbra * period_s:.0f} s per orbit)")
    # the umbra cone narrows away from the Earth: a little shorter than the cylinder
    assert umbra < cylindrical.mean() < umbra + penumbra
    assert abs(conical.mean() - cylindrical.mean()) < 0.003
    # two penumbra passes of about 8-9 s each at 550 km (the Sun's 0.27 degree radius)
    assert 12 < penumbra * period_s < 24


def test_sunlight_is_invariant_under_a_rotation_of_both_frames():
    rng = np.random.default_rng(1)
    positions = rng.normal(size=(500, 3))
    positions *= (EARTH_RADIUS_KM + 550) / np.linalg.norm(positions, axis=1, keepdims=True)
    angle = 1.234
    rotation = np.array([[math.cos(angle), math.sin(angle), 0],
                         [-math.sin(angle), math.cos(angle), 0], [0, 0, 1]])
    sun = sun_position_teme(np.array([2461000.5]))[0]
    before = sunlight_fraction(positions, sun)
    after = sunlight_fraction(positions @ rotation.T, rotation @ sun)
    assert np.allclose(before, after)
    ecef = sun_position_ecef(np.array([2461000.5]), np.array([0.0]), np.array([angle]))[0]
    assert np.allclose(ecef, rotation @ sun)


def test_the_sun_against_an_independent_ephemeris():
    """IAU SOFA's epv00 (the Earth's heliocentric position, VSOP2000-based), turned into the
    true equator and equinox of date by its IAU 2006/2000A precession-nutation matrix."""
    erfa = pytest.importorskip("erfa")
    dates = 2451545.0 + np.linspace(-9000, 15000, 97)  # 1975 to 2041
    ours = sun_position_teme(dates)
    worst_deg, worst_distance = 0.0, 0.0
    for jd, mine in zip(dates, ours, strict=True):
        heliocentric, _barycentric = erfa.epv00(jd, 0.0)
        sun_au = -np.asarray(heliocentric["p"])  # ICRS-aligned, AU
        theirs = erfa.pnm06a(jd, 0.0) @ sun_au * 149_597_870.7
        cosine = mine @ theirs / (np.linalg.norm(mine) * np.linalg.norm(theirs))
        worst_deg = max(worst_deg, math.degrees(math.acos(min(1.0, cosine))))
        worst_distance = max(worst_distance,
                             abs(np.linalg.norm(mine) / np.linalg.norm(theirs) - 1))
    print(f"sun direction: worst {worst_deg * 3600:.1f} arcsec; distance: worst "
          f"{worst_distance:.1e}")
    assert worst_deg < 0.02 and worst_distance < 2e-4
