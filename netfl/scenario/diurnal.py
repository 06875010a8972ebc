"""A measured day of Starlink load, as a beam's background users by local hour.

WetLinks (Laniewski et al., "WetLinks: a Large-Scale Longitudinal Starlink Dataset with
Contiguous Weather Data", arXiv:2402.16448) measured two fixed Starlink dishes (Osnabrueck and
Enschede) for a year with co-located weather stations. Its analysis gives, for samples without
rain, each hour's median download against the all-day median (its correction factors, Mbit/s,
the all-day median minus the hour's): the evening is slower, the small hours faster. netfl reads
that as load: a user alone in its beam with B background users gets R / (1 + B) of a beam that
carries R, so an hour whose median is a fraction m of the day's has (1 + B) / m - 1 of them.
The hours are as the data set stores them (its timestamps' zone is not documented: UTC or
Central European, at most an hour from the solar time at 7 deg E that netfl's beams use).
"""

from __future__ import annotations

# The all-day median minus each hour's median download, Mbit/s, hours 0-23, no-rain samples of
# both sites (WetLinks' Plotting_Scripts/correction_factors.csv).
WETLINKS_HOURLY_OFFSET_MBPS = (
    -9.2, -13.1, -12.8, -17.1, -20.5, -28.2,
    -15.0, -6.8, -5.3, -7.1, -2.7, -1.2,
    0.5, 1.5, 2.3, 4.4, 10.0, 19.8,
    26.2, 33.9, 34.5, 22.6, 6.9, -0.9,
)
# The no-rain median download the offsets are taken from (Enschede, Mbit/s).
WETLINKS_MEDIAN_MBPS = 245.4

PROFILES = ("wetlinks",)


def hourly_download_factors(offsets_mbps=WETLINKS_HOURLY_OFFSET_MBPS,
                            median_mbps: float = WETLINKS_MEDIAN_MBPS) -> list[float]:
    """Each hour's median download as a fraction of the all-day median (24 values)."""
    if len(offsets_mbps) != 24:
        raise ValueError(f"24 hourly offsets needed, got {len(offsets_mbps)}")
    if median_mbps <= 0:
        raise ValueError(f"the all-day median must be positive, got {median_mbps!r}")
    factors = [1.0 - offset / median_mbps for offset in offsets_mbps]
    if min(factors) <= 0:
        raise ValueError("an hour's offset is at least the all-day median: no load fits it")
    return factors


def background_by_hour(mean_users: float, factors: list[float]) -> list[float]:
    """Background users per local hour such that a lone user's share of a beam, R / (1 + B),
    is its all-day value R / (1 + ``mean_users``) times each hour's ``factors`` (0 in an hour
    faster than a beam with no background would allow: mean_users below about 0.13)."""
    if mean_users < 0:
        raise ValueError(f"mean_users must be at least 0, got {mean_users!r}")
    return [max((1.0 + mean_users) / factor - 1.0, 0.0) for factor in factors]


def profile(name: str, mean_users: float) -> list[float]:
    """A named day of load (``wetlinks``) around ``mean_users`` background users."""
    if name != "wetlinks":
        raise ValueError(f"unknown load profile {name!r}; known: {', '.join(PROFILES)}")
    return background_by_hour(mean_users, hourly_download_factors())
