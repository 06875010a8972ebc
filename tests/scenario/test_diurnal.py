"""The measured day of Starlink load: WetLinks' hourly medians read as a beam's background."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netfl.scenario.diurnal import (
    WETLINKS_HOURLY_OFFSET_MBPS,
    WETLINKS_MEDIAN_MBPS,
    background_by_hour,
    hourly_download_factors,
    profile,
)
from netfl.scenario.leo_links import SharedBeams


def test_the_evening_is_the_slowest_hour_and_the_small_hours_the_fastest():
    factors = hourly_download_factors()
    assert factors.index(min(factors)) == 20 and factors.index(max(factors)) == 5
    assert min(factors) == pytest.approx(1 - 34.5 / 245.4)  # 14% below the day at 20 h
    assert max(factors) == pytest.approx(1 + 28.2 / 245.4)  # 11% above it at 05 h


@given(mean=st.floats(0, 100), hour=st.integers(0, 23))
def test_a_lone_users_share_follows_the_measured_factor(mean, hour):
    # R / (1 + B(h)) = R / (1 + mean) * factor(h): the defining identity
    # where the hour is faster than a beam with no background at all, none is left (clipped)
    factors = hourly_download_factors()
    users = background_by_hour(mean, factors)
    if factors[hour] <= 1.0 + mean:
        assert 1.0 / (1.0 + users[hour]) == pytest.approx(factors[hour] / (1.0 + mean))
    else:
        assert users[hour] == 0.0


def test_the_profile_around_the_default_background():
    users = profile("wetlinks", 9)
    assert len(users) == 24
    assert users[20] == pytest.approx(10 / (1 - 34.5 / WETLINKS_MEDIAN_MBPS) - 1)  # 10.64
    assert users[5] == pytest.approx(10 / (1 + 28.2 / WETLINKS_MEDIAN_MBPS) - 1)  # 7.97
    assert len(WETLINKS_HOURLY_OFFSET_MBPS) == 24


def test_bad_profiles_are_refused():
    with pytest.raises(ValueError, match="unknown load profile 'ookla'"):
        profile("ookla", 9)
    with pytest.raises(ValueError, match="24 hourly offsets"):
        hourly_download_factors((1.0,) * 23)
    with pytest.raises(ValueError, match="no load fits"):
        hourly_download_factors((300.0,) * 24)


def test_a_scenario_names_the_profile_and_its_mean():
    beams = SharedBeams.model_validate({"background_by_hour": "wetlinks"})
    assert beams.background_by_hour == pytest.approx(profile("wetlinks", 9))
    assert beams.background_users is None
    around_4 = SharedBeams.model_validate({"background_by_hour": "wetlinks",
                                           "background_users": 4})
    assert around_4.background_by_hour == pytest.approx(profile("wetlinks", 4))
    # the resolved section reads back as itself
    assert SharedBeams.model_validate(around_4.model_dump()) == around_4
    with pytest.raises(ValueError, match="wetlinks"):
        SharedBeams.model_validate({"background_by_hour": "weekday"})
