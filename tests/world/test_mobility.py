"""Mobility and RSU coverage: contact windows in closed form, association, traffic, FCD."""

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from netfl.errors import CorruptDataFile
from netfl.world.mobility import (
    Trip,
    association,
    coverage_window,
    highway_trips,
    kmh,
    poisson_arrivals,
    read_fcd,
    rsu_positions,
    truncated_normal,
)

DATA = Path(__file__).parent / "data"


def straight(v: float, y: float = 0.0, length: float = 10_000.0) -> Trip:
    return Trip("v", 0.0, length / v, (0.0, y), (v, 0.0))


@pytest.mark.parametrize("speed_kmh", [38.0, 110.0])
@pytest.mark.parametrize("radius", [300.0, 500.0])
def test_contact_window_of_a_pass_lasts_2r_over_v(speed_kmh, radius):
    v = kmh(speed_kmh)
    t_in, t_out = coverage_window(straight(v), (5000.0, 0.0), radius)
    assert t_out - t_in == pytest.approx(2 * radius / v)
    assert t_in == pytest.approx((5000.0 - radius) / v)


def test_contact_window_with_a_lateral_offset_and_a_miss():
    v, radius, offset = 30.0, 300.0, 180.0
    t_in, t_out = coverage_window(straight(v, y=offset), (5000.0, 0.0), radius)
    assert t_out - t_in == pytest.approx(2 * math.sqrt(radius ** 2 - offset ** 2) / v)
    assert coverage_window(straight(v, y=400.0), (5000.0, 0.0), radius) is None
    # clipped to the trip: an RSU at the road's start covers it from t = 0
    assert coverage_window(straight(v), (0.0, 0.0), radius) == (0.0, pytest.approx(10.0))


def test_association_hands_over_at_the_midpoint_between_rsus():
    v, rsus = 25.0, rsu_positions(10_000.0, 1000.0)  # x = 500, 1500, ..., 9500
    contacts = association(straight(v), rsus, 600.0)  # overlapping coverage
    assert [c.rsu for c in contacts] == list(range(10))
    for a, b in zip(contacts, contacts[1:], strict=False):
        assert a.end_s == b.start_s == pytest.approx((rsus[a.rsu][0] + 500.0) / v)
    assert contacts[0].start_s == 0.0 and contacts[-1].end_s == pytest.approx(10_000.0 / v)


def test_association_leaves_gaps_where_coverage_does():
    v, rsus = 20.0, rsu_positions(4000.0, 1000.0)
    contacts = association(straight(v, length=4000.0), rsus, 300.0)
    assert [c.rsu for c in contacts] == [0, 1, 2, 3]
    assert all(c.end_s - c.start_s == pytest.approx(600.0 / v) for c in contacts)


def test_traffic_draws():
    rng = np.random.default_rng(0)
    times = poisson_arrivals(0.5, 10_000.0, rng)
    assert len(times) == pytest.approx(5000, rel=0.05) and np.all(np.diff(times) >= 0)
    speeds = truncated_normal(110.0, 5.8, 100.0, 120.0, 5000, rng)
    assert speeds.min() >= 100.0 and speeds.max() <= 120.0
    assert speeds.mean() == pytest.approx(110.0, abs=0.3)
    trips = highway_trips(10_000.0, 2, 3.5, 2000 / 3600, 3600.0,
                          (kmh(110), kmh(5.8), kmh(90), kmh(130)), rng)
    assert len(trips) == pytest.approx(4000, rel=0.1)
    east = [t for t in trips if t.velocity[0] > 0]
    assert east and all(t.start[0] == 0.0 and t.start[1] > 0 for t in east)
    assert all(t.position(t.end_s)[0] == pytest.approx(10_000.0) for t in east)
    assert [t.start_s for t in trips] == sorted(t.start_s for t in trips)


def test_fcd_parser_reads_a_small_trace_plain_and_gzipped(tmp_path):
    records = list(read_fcd(DATA / "fcd_small.xml"))
    assert [(r.time_s, r.vehicle) for r in records] == [
        (0.0, "veh0"), (1.0, "veh0"), (1.0, "veh1"), (2.0, "veh0"), (2.0, "veh1")]
    assert records[2].x_m == 500.0 and records[2].y_m == 3.2 and records[2].speed_mps == 30.5
    packed = tmp_path / "fcd.xml.gz"
    packed.write_bytes(gzip.compress((DATA / "fcd_small.xml").read_bytes()))
    assert list(read_fcd(packed)) == records


def test_fcd_parser_names_the_file_and_the_problem(tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_text('<fcd-export><timestep time="0"><vehicle id="a" x="1"')
    with pytest.raises(CorruptDataFile, match="broken.xml: not a valid SUMO FCD trace"):
        list(read_fcd(broken))
    bad = tmp_path / "bad.xml"
    bad.write_text('<fcd-export><timestep time="0"><vehicle id="a" x="east" y="0" speed="1"/>'
                   '</timestep></fcd-export>')
    with pytest.raises(CorruptDataFile, match="bad.xml: <vehicle id='a'> at time=0 has x='east'"):
        list(read_fcd(bad))


@pytest.mark.parametrize("attributes, words", [
    ('x="nan" y="0" speed="1"', "x='nan'"),
    ('x="1e300" y="0" speed="1"', "x='1e300'"),
    ('x="0" y="-inf" speed="1"', "y='-inf'"),
    ('x="0" y="0" speed="1e400"', "speed='1e400'"),
])
def test_fcd_numbers_outside_any_road_are_refused(tmp_path, attributes, words):
    """NaN or 1e300 coordinates became NaN positions, later blamed on RSU coverage."""
    bad = tmp_path / "bad.xml"
    bad.write_text(f'<fcd-export><timestep time="3"><vehicle id="v7" {attributes}/>'
                   '</timestep></fcd-export>')
    with pytest.raises(CorruptDataFile, match=rf"<vehicle id='v7'> at time=3 has {words}"):
        list(read_fcd(bad))


def test_fcd_steps_out_of_time_order_are_an_error_not_dropped(tmp_path):
    """A step earlier than the one before it was silently dropped."""
    bad = tmp_path / "bad.xml"
    bad.write_text('<fcd-export><timestep time="0"><vehicle id="a" x="0" y="0" speed="1"/>'
                   '</timestep><timestep time="2"><vehicle id="a" x="2" y="0" speed="1"/>'
                   '</timestep><timestep time="1"><vehicle id="a" x="1" y="0" speed="1"/>'
                   '</timestep></fcd-export>')
    with pytest.raises(CorruptDataFile, match="time=1> comes after time=2"):
        list(read_fcd(bad))
