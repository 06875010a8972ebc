"""Processor sharing on one channel, against closed forms."""

import pytest
import simpy

from netfl.network.fabric import Fabric
from netfl.network.flow import Channel, LinkDown

C = 1e6  # bit/s


def transmit(channel: Channel, nbits: float, owner: object = None):
    """A flow over ``channel`` alone (``owner``: the link whose going down fails it)."""
    return channel.fabric.transmit([channel], [owner] if owner is not None else [], nbits)


def _run(flows, capacity=C, events=()):
    """flows: (name, start_s, bits). events: (time_s, callable(channel)). Returns end times."""
    env = simpy.Environment()
    channel = Channel(Fabric(env), "x", capacity)
    done = {}

    def flow(name, start, bits):
        yield env.timeout(start)
        handle = transmit(channel, bits)
        try:
            yield handle.event
            done[name] = env.now
        except LinkDown:
            done[name] = ("failed", env.now, handle.sent_bits)

    def at(t, action):
        yield env.timeout(t)
        action(channel)

    for spec in flows:
        env.process(flow(*spec))
    for t, action in events:
        env.process(at(t, action))
    env.run()
    return done


def test_single_flow_takes_size_over_capacity():
    assert _run([("a", 0, 2e6)])["a"] == pytest.approx(2.0)


@pytest.mark.parametrize("n", [2, 3, 10])
def test_n_equal_flows_finish_together_at_n_times_size_over_capacity(n):
    done = _run([(i, 0, 1e6) for i in range(n)])
    assert all(t == pytest.approx(n * 1e6 / C) for t in done.values())


def test_late_joiner_follows_processor_sharing():
    # a alone for t1 (served C*t1), then both at C/2: a ends at 2S/C - t1, b at 2S/C.
    s, t1 = 1e6, 0.4
    done = _run([("a", 0, s), ("b", t1, s)])
    assert done["a"] == pytest.approx(2 * s / C - t1)
    assert done["b"] == pytest.approx(2 * s / C)


def test_unequal_flows_share_then_the_long_one_speeds_up():
    # small (0.5 Mb) and big (2 Mb) start together: small ends at 2*0.5/C = 1 s; big has 1.5 Mb
    # left at full rate: ends at 1 + 1.5 = 2.5 s.
    done = _run([("small", 0, 0.5e6), ("big", 0, 2e6)])
    assert done["small"] == pytest.approx(1.0)
    assert done["big"] == pytest.approx(2.5)


def test_capacity_change_applies_from_then_on():
    done = _run([("a", 0, 2e6)], events=[(1.0, lambda ch: ch.set_capacity(2 * C))])
    assert done["a"] == pytest.approx(1.5)  # 1 Mb in the first second, 1 Mb at 2 Mb/s


def test_fail_stops_only_the_owners_flows_and_reports_progress():
    env = simpy.Environment()
    channel = Channel(Fabric(env), "cell", C)
    mine, other = object(), object()
    a = transmit(channel, 1e6, owner=mine)
    b = transmit(channel, 1e6, owner=other)
    outcome = {}

    def watch(name, flow):
        try:
            yield flow.event
            outcome[name] = env.now
        except LinkDown:
            outcome[name] = ("failed", env.now, flow.sent_bits)

    def cut():
        yield env.timeout(0.5)
        channel.fail(mine)

    env.process(watch("a", a))
    env.process(watch("b", b))
    env.process(cut())
    env.run()
    assert outcome["a"] == ("failed", 0.5, pytest.approx(0.25e6))
    # b had 0.25 Mb at 0.5 s and runs alone after: 0.75 Mb more at C -> 1.25 s.
    assert outcome["b"] == pytest.approx(1.25)


def test_a_residual_below_the_clock_resolution_still_completes():
    # Late in a long run, a flow's remaining time can be smaller than the float spacing of
    # env.now: it must complete instead of waking at the same instant forever.
    import math

    start = 2.0**23  # ~97 days: the spacing of floats near it is 1.9 ns
    env = simpy.Environment(initial_time=start)
    channel = Channel(Fabric(env), "x", 1e9)
    other = object()
    done = {}

    def scenario():
        for _ in range(2):
            transmit(channel, 1e6, owner=other).event.defused = True
        a = transmit(channel, 1e6)
        yield env.timeout(math.ulp(start))
        b = transmit(channel, 1e6)  # finishes a fraction of a bit after a
        yield env.timeout(1e-4)
        channel.fail(other)
        yield a.event
        yield b.event
        done["b"] = env.now

    env.process(scenario())
    for _ in range(10_000):
        if env.peek() == float("inf"):
            break
        env.step()
    assert "b" in done and channel.active_flows == 0
