import math

import numpy as np
import pytest

from netfl.sim.clock import (
    RandomStreams,
    format_bytes,
    format_duration,
    format_share,
    parse_quantity,
)


@pytest.mark.parametrize(("text", "dimension", "expected"), [
    ("10 Mbps", "rate", 10e6), ("1.5 Gbit/s", "rate", 1.5e9), ("2 MB/s", "rate", 16e6),
    ("20 ms", "time", 0.02), ("2 h", "time", 7200), ("1.5min", "time", 90),
    ("3 days", "time", 259200),
    ("1.5 MB", "size", 1.5e6), ("1 MiB", "size", 2**20), ("8 kbit", "size", 1000),
    ("40 dBm", "power", 40), ("10 dBW", "power", 40), ("1 W", "power", 30), ("1 mW", "power", 0),
    ("2.4 GHz", "frequency", 2.4e9), ("3 dBi", "gain", 3), ("1 km", "distance", 1000),
    ("36 km/h", "speed", 10), ("10 GFLOPS", "flops", 1e10), ("2 TFLOP/s", "flops", 2e12),
    ("1e3 ms", "time", 1.0), (".5 s", "time", 0.5), (7, "time", 7.0), ("7", "time", 7.0),
])
def test_quantities(text, dimension, expected):
    assert parse_quantity(text, dimension) == pytest.approx(expected)


@pytest.mark.parametrize(("text", "dimension", "fragment"), [
    ("10 Mbs", "rate", "unknown rate unit 'Mbs'; use one of: bps"),
    ("fast", "rate", "expected a number and a unit, such as \"10 Mbps\""),
    ("10 ms", "rate", "unknown rate unit 'ms'"),
    (True, "time", "not a boolean"),
    ([1], "time", "expected a time"),
    ("-1 W", "power", "must be positive"),
])
def test_bad_quantities(text, dimension, fragment):
    with pytest.raises(ValueError, match=None) as info:
        parse_quantity(text, dimension)
    assert fragment in str(info.value)


def test_formatting():
    assert format_duration(0.25) == "250 ms"
    assert format_duration(12.34) == "12.3 s"
    assert format_duration(245) == "4 min 05 s"
    assert format_duration(7380) == "2 h 03 min"
    assert format_duration(5 * 86400) == "5.0 days"
    assert format_duration(1e300) == "3.17e+292 years"  # not a 300-digit number of hours
    assert format_duration(math.inf) == "never" and format_duration(math.nan) == "?"
    assert format_bytes(950) == "950 B" and format_bytes(3.1e6) == "3.1 MB"


def test_streams_are_reproducible_and_independent():
    a, b = RandomStreams(7), RandomStreams(7)
    assert a.get("network").random() == b.get("network").random()
    assert a.get("network") is a.get("network")
    # drawing from one stream does not shift another
    c = RandomStreams(7)
    c.get("world").random(1000)
    assert c.get("training").random() == RandomStreams(7).get("training").random()
    assert RandomStreams(8).get("network").random() != RandomStreams(7).get("network").random()


def test_derived_streams_depend_only_on_their_keys():
    s = RandomStreams(3)
    x = s.derive("training", 4, 2).random(3)
    s.get("training").random(10)
    np.testing.assert_array_equal(x, RandomStreams(3).derive("training", 4, 2).random(3))
    assert not np.array_equal(x, s.derive("training", 2, 4).random(3))
    assert s.seed_for("training") == RandomStreams(3).seed_for("training")
    assert 0 <= s.seed_for("training") < 2**63


def test_a_share_that_rounds_to_zero_but_is_not_zero_reads_below_one_percent():
    assert format_share(0.0) == "0%"
    assert format_share(0.004) == "<1%"
    assert format_share(0.005) == "<1%"  # Python rounds 0.5 to even: 0
    assert format_share(0.012) == "1%" and format_share(0.93) == "93%"


def test_a_compact_generator_draws_what_the_derived_one_draws():
    from netfl.sim.clock import RandomStreams

    streams = RandomStreams(11)
    full, compact = streams.derive("training-batches", 7), streams.derive_compact(
        "training-batches", 7)
    assert (full.standard_normal(50) == compact.standard_normal(50)).all()
    assert (full.integers(0, 1000, 20) == compact.integers(0, 1000, 20)).all()
    other = streams.derive_compact("training-batches", 8)
    assert other.standard_normal() != streams.derive("training-batches", 7).standard_normal()
