"""Contact plans: windows against skyfield's rise/set search and a brute-force elevation scan,
windows open at the start or the end of the span, Starlink's pass lengths, the input forms, the
vectorized blocks, and the disk cache (hit on equal inputs, miss on any change)."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from netfl.world import contact_plan
from netfl.world.contact_plan import COLUMNS, contact_windows, default_cache_dir, plan_key
from netfl.world.orbits import (
    PRESETS,
    WalkerShell,
    elevation_deg,
    parse_tle,
    positions_ecef,
    site_ecef,
    site_up,
    tle_text,
    walker_satrecs,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = 8
SPAN = HOURS * 3600.0
MASK = 10.0


def subpoint(position_km: np.ndarray) -> tuple[float, float]:
    """Geocentric latitude and longitude under an Earth-fixed position (close enough to put a
    satellite high in a site's sky)."""
    x, y, z = position_km
    return float(np.degrees(np.arctan2(z, np.hypot(x, y)))), float(np.degrees(np.arctan2(y, x)))


@pytest.fixture(scope="module")
def sky_case():
    """Five walker-40-5 and three Starlink-shell satellites as 3LE text; five sites (different
    latitudes, one at 2.5 km altitude, one under satellite A0 at the start and one under
    satellite A3 at the end); our windows and skyfield's events over 8 hours."""
    sf = pytest.importorskip("skyfield.api")
    walker = walker_satrecs(PRESETS["walker-40-5"], START)
    starlink = walker_satrecs(PRESETS["starlink-shell1"], START)
    sats = [walker[k] for k in (0, 9, 18, 27, 36)] + [starlink[k] for k in (0, 500, 1200)]
    names = [f"A{k}" for k in range(5)] + [f"B{k}" for k in range(3)]
    text = tle_text(names, sats)
    records = [rec for _, rec in parse_tle(text)]
    first = positions_ecef(records[:1], START, np.array([0.0]))[0, 0]
    last = positions_ecef(records[3:4], START, np.array([SPAN]))[0, 0]
    sites = [(39.9, 116.4, 0.0), (0.0, -60.0, 0.0), (-45.0, 170.0, 2500.0), (70.0, 20.0, 0.0),
             (*subpoint(first), 0.0), (*subpoint(last), 0.0)]
    ours = contact_windows(text, sites, START, SPAN, MASK, cache_dir=False)
    ts = sf.load.timescale(builtin=True)
    t0, t1 = ts.from_datetime(START), ts.from_datetime(START + timedelta(hours=HOURS))
    lines = text.splitlines()
    theirs = {}
    for k, name in enumerate(names):
        sat = sf.EarthSatellite(lines[3 * k + 1], lines[3 * k + 2], name, ts)
        for j, (lat, lon, alt) in enumerate(sites):
            times, events = sat.find_events(sf.wgs84.latlon(lat, lon, elevation_m=alt), t0, t1,
                                             altitude_degrees=MASK)
            theirs[name, j] = skyfield_windows((times - t0) * 86400.0, events)
    return {"text": text, "sites": sites, "names": names, "ours": ours, "theirs": theirs}


def skyfield_windows(seconds, events) -> list[tuple[float, float]]:
    """Pair skyfield's rise (0) and set (2) events into windows; a set first means the
    satellite was up at the start (rise 0), a rise last that it is still up (set = span)."""
    out, rise = [], None
    for t, event in zip(seconds, events, strict=True):
        if event == 0:
            rise = float(t)
        elif event == 2:
            out.append((0.0 if rise is None and not out else rise, float(t)))
            rise = None
    if rise is not None:
        out.append((rise, SPAN))
    return out


def test_windows_agree_with_skyfield_within_a_second(sky_case):
    ours, theirs = sky_case["ours"], sky_case["theirs"]
    assert list(ours.columns) == COLUMNS
    assert len(ours) == sum(len(w) for w in theirs.values()) > 30
    interior = 0
    for (name, site), expected in theirs.items():
        got = ours[(ours["satellite"] == name) & (ours["site"] == site)]
        assert len(got) == len(expected), (name, site)
        for (rise, set_), (sky_rise, sky_set) in zip(
                zip(got["rise_s"], got["set_s"], strict=True), expected, strict=True):
            if sky_rise == 0.0:  # open at the start: only the set is an event
                assert rise == 0.0
            else:
                assert rise == pytest.approx(sky_rise, abs=1.0)
                interior += 1
            if sky_set == SPAN:
                assert set_ == SPAN
            else:
                assert set_ == pytest.approx(sky_set, abs=1.0)
                interior += 1
    assert interior > 60


def test_windows_open_at_the_start_or_the_end_are_cut_there(sky_case):
    ours, sites = sky_case["ours"], sky_case["sites"]
    at_start = ours[(ours["satellite"] == "A0") & (ours["site"] == len(sites) - 2)]
    assert at_start.iloc[0]["rise_s"] == 0.0 and 0 < at_start.iloc[0]["set_s"] < 900
    at_end = ours[(ours["satellite"] == "A3") & (ours["site"] == len(sites) - 1)]
    assert at_end.iloc[-1]["set_s"] == SPAN and SPAN - 900 < at_end.iloc[-1]["rise_s"] < SPAN
    # skyfield agrees: the first saw no rise, the second no set
    assert sky_case["theirs"]["A0", len(sites) - 2][0][0] == 0.0
    assert sky_case["theirs"]["A3", len(sites) - 1][-1][1] == SPAN
    # nothing else touches the span's ends, and every window is a positive interval
    assert (ours["set_s"] > ours["rise_s"]).all()
    assert ((ours["rise_s"] >= 0) & (ours["set_s"] <= SPAN)).all()


def test_a_walker_shell_gives_the_windows_of_its_tle_export(sky_case):
    walker = walker_satrecs(PRESETS["walker-40-5"], START)
    starlink = walker_satrecs(PRESETS["starlink-shell1"], START)
    pairs = list(zip(sky_case["names"], [walker[k] for k in (0, 9, 18, 27, 36)]
                     + [starlink[k] for k in (0, 500, 1200)], strict=True))
    exact = contact_windows(pairs, sky_case["sites"], START, SPAN, MASK, cache_dir=False)
    ours = sky_case["ours"]
    assert list(exact["satellite"]) == list(ours["satellite"])
    assert list(exact["site"]) == list(ours["site"])
    assert np.abs(exact["rise_s"] - ours["rise_s"]).max() < 1.0
    assert np.abs(exact["set_s"] - ours["set_s"]).max() < 1.0


def test_windows_are_sorted_and_pairs_do_not_overlap(sky_case):
    ours = sky_case["ours"]
    assert ours["rise_s"].is_monotonic_increasing
    for _, group in ours.groupby(["satellite", "site"]):
        assert (group["rise_s"].to_numpy()[1:] > group["set_s"].to_numpy()[:-1]).all()


# ------------------------------------------------------------------------ brute force


@pytest.mark.parametrize("sites, mask", [
    ([(39.9, 116.4), (41.0, 118.0), (38.5, 115.0)], 10.0),  # clustered: candidate filter on
    ([(39.9, 116.4), (0.0, -60.0), (-45.0, 170.0, 2500.0), (89.0, 0.0)], 25.0),
    ([(39.9, 116.4), (-33.9, 18.4), (64.0, -150.0)], 0.0),
    ([(39.9, 116.4), (-80.0, 0.0)], -5.0),  # a negative mask: the horizon dips
])
def test_windows_match_a_brute_force_elevation_scan(sites, mask):
    shell = PRESETS["walker-40-5"]
    span = 3 * 3600.0  # more than one SGP4 block of 720 steps
    table = contact_windows(shell, sites, START, span, mask, cache_dir=False)
    names = [f"p{k // shell.per_plane}s{k % shell.per_plane}" for k in range(shell.total)]
    assert set(table["satellite"]) <= set(names)
    rows = np.array([tuple(s) + (0.0,) * (3 - len(s)) for s in sites])
    times = np.arange(0.0, span, 2.0)
    pos = positions_ecef(walker_satrecs(shell, START), START, times)  # (S, T, 3)
    up, here = site_up(rows[:, 0], rows[:, 1]), site_ecef(rows[:, 0], rows[:, 1], rows[:, 2])
    el = elevation_deg(pos[:, :, None, :], here[None, None], up[None, None])  # (S, T, U)
    expected = el >= mask
    got = np.zeros_like(expected)
    near_edge = np.zeros_like(expected)
    index = {name: k for k, name in enumerate(names)}
    for r in table.itertuples():
        s = index[r.satellite]
        got[s, (times >= r.rise_s) & (times <= r.set_s), r.site] = True
        for edge in (r.rise_s, r.set_s):
            near_edge[s, np.abs(times - edge) < 0.2, r.site] = True
    assert expected.any()
    assert np.array_equal(expected & ~near_edge, got & ~near_edge)


def test_block_sizes_do_not_change_the_windows(monkeypatch):
    sites = [(39.9, 116.4), (0.0, 0.0), (-45.0, 170.0)]
    plain = contact_windows("walker-40-5", sites, START, 4 * 3600.0, 10.0, cache_dir=False)
    monkeypatch.setattr(contact_plan, "_TIMES_PER_SGP4_CALL", 37)
    monkeypatch.setattr(contact_plan, "_PAIRS_PER_BLOCK", 40 * 3 * 5)  # 5 steps per block
    small = contact_windows("walker-40-5", sites, START, 4 * 3600.0, 10.0, cache_dir=False)
    pd.testing.assert_frame_equal(plain, small)


def test_the_tolerance_bounds_the_crossing_error():
    sites = [(39.9, 116.4)]
    fine = contact_windows("walker-40-5", sites, START, 6 * 3600.0, 10.0, tolerance_s=0.001,
                           cache_dir=False)
    coarse = contact_windows("walker-40-5", sites, START, 6 * 3600.0, 10.0, step_s=30.0,
                             tolerance_s=0.5, cache_dir=False)
    assert len(fine) == len(coarse) > 3
    inner = (fine["rise_s"] > 0) & (fine["set_s"] < 6 * 3600.0)
    assert np.abs(fine["rise_s"] - coarse["rise_s"])[inner].max() <= 0.5
    assert np.abs(fine["set_s"] - coarse["set_s"])[inner].max() <= 0.5


# ------------------------------------------------------------------------ Starlink passes


def test_starlink_shell1_full_passes_last_200_to_300_s_at_25_deg():
    # the whole shell over two sites for 2 h: a pass at 25 deg spans at most 2 x 8.4 deg of
    # central angle, ~270 s of a 95.6 min orbit (Earth's rotation adds a little)
    span = 2 * 3600.0
    table = contact_windows("starlink-shell1", [(39.9, 116.4), (-1.3, 36.8)], START, span,
                            25.0, cache_dir=False)
    inner = table[(table["rise_s"] > 0) & (table["set_s"] < span)]
    length = inner["set_s"] - inner["rise_s"]
    assert (length <= 300.0).all()
    for site in (0, 1):
        longest = length[inner["site"] == site].nlargest(10)
        assert len(longest) == 10
        assert ((longest >= 200.0) & (longest <= 300.0)).all()
        assert longest.max() > 250.0
    # windows open at the start or the end are cut, never longer either
    assert (table["set_s"] - table["rise_s"]).max() <= 300.0
    # a user under a dense shell sees several satellites at once, most of the time
    assert table["satellite"].nunique() > 100


# ------------------------------------------------------------------------ input forms


def test_every_form_of_the_satellites_gives_the_same_windows():
    sites = [(39.9, 116.4, 0.0), (-10.0, 20.0, 0.0)]
    shell = PRESETS["walker-40-5"]
    by_name = contact_windows("walker-40-5", sites, START, 3600.0, 10.0, cache_dir=False)
    forms = [shell, {"altitude_km": 500.0, "inclination_deg": 80.0, "planes": 5,
                     "per_plane": 8, "phasing": 1}]
    for form in forms:
        pd.testing.assert_frame_equal(
            contact_windows(form, sites, START, 3600.0, 10.0, cache_dir=False), by_name)
    pairs = [(f"x{k}", sat) for k, sat in enumerate(walker_satrecs(shell, START))]
    renamed = contact_windows(pairs, sites, START, 3600.0, 10.0, cache_dir=False)
    assert list(renamed["satellite"]) == [f"x{int(n[1]) * 8 + int(n[3:])}"
                                          for n in by_name["satellite"]]
    pd.testing.assert_frame_equal(renamed.drop(columns="satellite"),
                                  by_name.drop(columns="satellite"))
    # sites given as (lat, lon) rows are at altitude 0
    two = contact_windows("walker-40-5", [s[:2] for s in sites], START, 3600.0, 10.0,
                          cache_dir=False)
    pd.testing.assert_frame_equal(two, by_name)


def test_start_forms_naive_is_utc_and_zones_convert():
    sites = [(39.9, 116.4)]
    reference = contact_windows("walker-40-5", sites, START, 3600.0, 10.0, cache_dir=False)
    for start in ("2026-01-01T00:00:00Z", "2026-01-01T08:00:00+08:00", datetime(2026, 1, 1),
                  "2026-01-01T00:00:00"):
        pd.testing.assert_frame_equal(
            contact_windows("walker-40-5", sites, start, 3600.0, 10.0, cache_dir=False),
            reference)
    later = contact_windows("walker-40-5", sites, START + timedelta(minutes=30), 3600.0, 10.0,
                            cache_dir=False)
    assert not later.equals(reference)


@pytest.mark.parametrize("argument", ["duration_s", "step_s", "tolerance_s"])
def test_non_positive_spans_and_steps_are_refused(argument):
    kwargs = {"duration_s": 3600.0, "step_s": 10.0, "tolerance_s": 0.1} | {argument: 0.0}
    duration = kwargs.pop("duration_s")
    with pytest.raises(ValueError, match="must be positive"):
        contact_windows("walker-40-5", [(0.0, 0.0)], START, duration, 10.0, cache_dir=False,
                        **kwargs)


def test_no_window_gives_an_empty_table_with_the_columns():
    # an equatorial shell is never 25 deg up from near the pole
    table = contact_windows(WalkerShell(550.0, 0.0, 2, 4, 1), [(85.0, 0.0)], START, 3600.0,
                            25.0, cache_dir=False)
    assert table.empty and list(table.columns) == COLUMNS


# ------------------------------------------------------------------------ the cache


BASE = {"satellites": "walker-40-5", "sites": [(39.9, 116.4), (10.0, 10.0, 100.0)],
        "start": START, "duration_s": 3 * 3600.0, "min_elevation_deg": 10.0}


def call(cache_dir, **changes):
    args = BASE | changes
    return contact_windows(args["satellites"], args["sites"], args["start"], args["duration_s"],
                           args["min_elevation_deg"], step_s=args.get("step_s", 10.0),
                           tolerance_s=args.get("tolerance_s", 0.1), cache_dir=cache_dir)


@pytest.fixture
def counted(monkeypatch):
    """compute_windows, counting its calls."""
    calls = []
    real = contact_plan.compute_windows

    def compute(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(contact_plan, "compute_windows", compute)
    return calls


def test_a_second_call_reads_the_cache(tmp_path, monkeypatch):
    first = call(tmp_path)
    files = list(tmp_path.glob("*.parquet"))
    assert len(files) == 1 and len(files[0].stem) == 32
    assert not list(tmp_path.glob("*.part"))

    def refuse(*args, **kwargs):
        raise AssertionError("the plan was computed again")

    monkeypatch.setattr(contact_plan, "compute_windows", refuse)
    second = call(tmp_path)
    pd.testing.assert_frame_equal(first, second)
    assert list(second.columns) == COLUMNS and len(second) > 10
    # names are not part of the key: equal elements under other names hit, with the new names
    shell = PRESETS["walker-40-5"]
    pairs = [(f"sat{k}", sat) for k, sat in enumerate(walker_satrecs(shell, START))]
    renamed = call(tmp_path, satellites=pairs)
    assert renamed["satellite"].str.startswith("sat").all()
    pd.testing.assert_frame_equal(renamed.drop(columns="satellite"),
                                  first.drop(columns="satellite"))


def other_satellites():
    sats = walker_satrecs(PRESETS["walker-40-5"], START)
    moved = walker_satrecs(WalkerShell(501.0, 80.0, 5, 8, 1), START)
    return [(f"p{k // 8}s{k % 8}", moved[k] if k == 39 else sat) for k, sat in enumerate(sats)]


@pytest.mark.parametrize("change", [
    {"satellites": "starlink-shell1"},
    {"satellites": "one satellite moved"},
    {"satellites": "one satellite fewer"},
    {"sites": [(39.9, 116.4), (10.0, 10.0, 101.0)]},
    {"sites": [(39.9, 116.4)]},
    {"start": START + timedelta(seconds=1)},
    {"duration_s": 3 * 3600.0 + 10.0},
    {"min_elevation_deg": 10.5},
    {"step_s": 5.0},
    {"tolerance_s": 0.05},
], ids=lambda change: "-".join(f"{k}" for k in change) + (
    f"-{change['satellites'].replace(' ', '-')}" if isinstance(change.get("satellites"), str)
    else ""))
def test_any_change_of_input_misses_the_cache(tmp_path, counted, change):
    call(tmp_path)
    call(tmp_path)
    assert len(counted) == 1  # the second call hit
    if change.get("satellites") == "one satellite moved":
        change = {"satellites": other_satellites()}
    elif change.get("satellites") == "one satellite fewer":
        change = {"satellites": [(f"p{k // 8}s{k % 8}", sat) for k, sat in enumerate(
            walker_satrecs(PRESETS["walker-40-5"], START)[:39])]}
    if change.get("satellites") == "starlink-shell1":
        change = {"satellites": "starlink-shell1", "duration_s": 600.0}
    call(tmp_path, **change)
    assert len(counted) == 2
    assert len(list(tmp_path.glob("*.parquet"))) == 2


def test_the_key_covers_every_input():
    sats = walker_satrecs(PRESETS["walker-40-5"], START)
    sites = np.array([[39.9, 116.4, 0.0]])
    base = (sats, sites, START, 3600.0, 10.0, 10.0, 0.1)
    key = plan_key(*base)
    assert key == plan_key(*base) and len(key) == 32
    variants = [(sats[:-1],), (sats[::-1],), (None, sites + [[0.0, 0.0, 1.0]])]
    for k, value in enumerate([START + timedelta(microseconds=1), 3600.5, 10.01, 9.0, 0.2]):
        args = list(base)
        args[2 + k] = value
        assert plan_key(*args) != key
    for variant in variants:
        args = list(base)
        for k, value in enumerate(variant):
            if value is not None:
                args[k] = value
        assert plan_key(*args) != key


def test_cache_false_writes_nothing_and_none_uses_the_default_folder(tmp_path, monkeypatch,
                                                                      counted):
    monkeypatch.setenv("NETFL_CACHE_DIR", str(tmp_path / "root"))
    assert default_cache_dir() == tmp_path / "root" / "contact-plans"
    call(False)
    call(False)
    assert len(counted) == 2 and not (tmp_path / "root").exists()
    call(None)
    call(None)
    assert len(counted) == 3
    assert len(list((tmp_path / "root" / "contact-plans").glob("*.parquet"))) == 1
