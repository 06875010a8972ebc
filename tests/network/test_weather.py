"""Rain and gas attenuation against the ITU's own validation examples (ITU-R P.838-3, P.618-13
and P.676-12, as ITU-R Study Group 3 publishes them) and their shapes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netfl.network.weather import (
    gas_attenuation_db,
    rain_attenuation_db,
    rain_attenuation_exceeded_db,
    rain_coefficients,
)

# the ITU validation case in London: 14.25 GHz, 31.077 deg, horizontal polarisation,
# R_0.01 = 26.48 mm/h, the station 31.4 m up, h_R = 2.4527 km from P.839-4's map
LONDON = dict(frequency_ghz=14.25, elevation_deg=31.07699124, latitude_deg=51.5,
              rain_height=2.4527333, station_height_km=0.031382984, tilt_deg=0.0)


def test_p838_coefficients_of_the_validation_row():
    k, alpha = rain_coefficients(14.25, 31.07699124, 0.0)
    assert k == pytest.approx(0.03975488, rel=1e-6)
    assert alpha == pytest.approx(1.12418043, rel=1e-6)
    assert k * 26.48052 ** alpha == pytest.approx(1.58130839, rel=1e-6)


def test_circular_polarisation_does_not_depend_on_elevation():
    assert rain_coefficients(11.7, 20.0) == pytest.approx(rain_coefficients(11.7, 70.0))
    k, alpha = rain_coefficients(11.7, 40.0)
    assert (k, alpha) == pytest.approx((0.022118, 1.16156), rel=1e-4)


@pytest.mark.parametrize("p, expected", [(1.0, 0.495317069), (0.1, 2.185847422),
                                         (0.01, 6.798072267), (0.001, 14.89982248)])
def test_p618_rain_attenuation_of_the_validation_case(p, expected):
    assert rain_attenuation_exceeded_db(p, 26.48052, **LONDON) == pytest.approx(expected,
                                                                               rel=1e-6)


def test_no_rain_or_a_station_above_it_has_no_rain_loss():
    assert rain_attenuation_db(0.0, **LONDON) == 0.0
    assert rain_attenuation_db(20.0, 14.25, 40.0, 51.5, rain_height=1.0,
                               station_height_km=1.2) == 0.0
    with pytest.raises(ValueError, match=">= 0"):
        rain_attenuation_db(-1.0, **LONDON)
    with pytest.raises(ValueError, match="0.001-5%"):
        rain_attenuation_exceeded_db(10.0, 26.0, **LONDON)


@given(st.floats(0.1, 150.0), st.floats(0.1, 150.0), st.floats(10.0, 89.0),
       st.floats(-60.0, 60.0))
def test_more_rain_or_a_lower_path_loses_more(r1, r2, elevation, latitude):
    low, high = sorted((r1, r2))
    common = dict(frequency_ghz=11.7, latitude_deg=latitude, rain_height=3.0)
    assert (rain_attenuation_db(low, elevation_deg=elevation, **common)
            <= rain_attenuation_db(high, elevation_deg=elevation, **common) + 1e-12)
    assert rain_attenuation_db(high, elevation_deg=elevation, **common) > 0


def test_gas_attenuation_is_the_zenith_value_over_sin_elevation():
    assert gas_attenuation_db(11.7, 90.0) == pytest.approx(0.0574)
    assert gas_attenuation_db(14.25, 30.0) == pytest.approx(2 * 0.0735)
    assert gas_attenuation_db(13.0, 90.0) == pytest.approx(
        0.0589 + (0.0735 - 0.0589) * (1.0 / 2.25))
    with pytest.raises(ValueError, match="11.7-14.25 GHz"):
        gas_attenuation_db(20.0, 45.0)
    with pytest.raises(ValueError, match="5-90 deg"):
        gas_attenuation_db(12.0, 2.0)


def budget(**weather):
    from netfl.scenario.leo import LinkBudgetGsl

    fields = {"kind": "link-budget"}
    if weather:
        fields["weather"] = weather
    return LinkBudgetGsl.model_validate(fields)


def test_a_link_budgets_weather_costs_its_rate_the_itu_loss(tmp_path):
    from netfl.network import satlink
    from netfl.network.radio import AccessRadio
    from netfl.network.weather import weather_model

    spec = budget(rain={"rate": 25.0, "height": "3 km"})
    orbit = 6_921e3  # 550 km
    radio = AccessRadio(spec, orbit_radius_m=orbit, weather=weather_model(spec.weather))
    distance = 800e3
    elevation = satlink.elevation_from_range_deg(distance, orbit)
    up, down = radio.rates_bps(distance, latitude_deg=40.0, t=10.0)
    for direction, rate in ((spec.uplink, up), (spec.downlink, down)):
        f = direction.frequency / 1e9
        loss = gas_attenuation_db(f, elevation) + rain_attenuation_db(25.0, f, elevation, 40.0,
                                                                      3.0)
        c_n0 = satlink.c_over_n0_dbhz(distance, direction.frequency, direction.eirp,
                                      direction.g_over_t, loss)
        assert rate == pytest.approx(satlink.dvb_s2_rate_bps(
            c_n0, direction.bandwidth, spec.roll_off, spec.implementation_margin))
    clear = AccessRadio(budget(), orbit_radius_m=orbit).rates_bps(distance)
    # the downlink keeps its top MODCOD through 25 mm/h (its margin); a storm takes it
    assert up < clear[0] and down == clear[1]
    storm = budget(rain={"rate": 150.0, "height": "3 km"})
    wet = AccessRadio(storm, orbit_radius_m=orbit, weather=weather_model(storm.weather))
    assert wet.rates_bps(distance, latitude_deg=40.0)[1] < clear[1]


def test_a_rain_series_gives_the_rate_of_its_last_row(tmp_path):
    from netfl.network.weather import weather_model

    path = tmp_path / "rain.csv"
    path.write_text("time_s,rate_mm_h\n60,5\n120,0\n300,40\n")
    model = weather_model(budget(rain={"series": str(path), "height": "3 km"}).weather)
    assert [model.rain_rate(t) for t in (0, 60, 119, 120, 299, 300, 1e6)] == [
        0, 5, 5, 0, 0, 40, 40]
    assert model.loss_db(11.7e9, 40.0, 50.0, 400.0) > model.loss_db(11.7e9, 40.0, 50.0, 150.0)


@pytest.mark.parametrize("text, message", [
    ("time,rate\n0,1\n", "no column time_s, rate_mm_h"),
    ("time_s,rate_mm_h\n0,-1\n", "row 2: rate_mm_h"),
    ("time_s,rate_mm_h\n10,1\n5,2\n", "row 3: time_s 5 does not come after 10"),
    ("time_s,rate_mm_h\nx,1\n", "row 2: time_s"),
])
def test_a_broken_rain_series_is_a_scenario_error_naming_the_row(tmp_path, text, message):
    from netfl.errors import ScenarioError
    from netfl.network.weather import weather_model

    path = tmp_path / "rain.csv"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=message):
        weather_model(budget(rain={"series": str(path), "height": "3 km"}).weather)


@pytest.mark.parametrize("fields, message", [
    ({"weather": {"gas": True}, "atmosphere": 0.5}, "not both"),
    ({"weather": {"rain": {"height": "3 km"}}}, "rain.rate"),
    ({"weather": {"gas": True}, "downlink": {"frequency": "20 GHz", "bandwidth": "250 MHz",
                                             "eirp": 66.7, "g_over_t": 12.1}}, "11.7-14.25"),
])
def test_weather_settings_that_cannot_hold_are_refused(fields, message):
    from netfl.scenario.leo import LinkBudgetGsl

    with pytest.raises(ValueError, match=message):
        LinkBudgetGsl.model_validate({"kind": "link-budget"} | fields)
