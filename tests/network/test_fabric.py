"""The fabric's incremental max-min rates equal a from-scratch solve after every change, and
flows end when their bits are sent."""

import math

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.network.fabric import Fabric
from netfl.network.flow import Channel, LinkDown
from netfl.network.maxmin import max_min_rates


def scratch_rates(channels, flows):
    alive = [f for f in flows if f.alive]
    capacity = {c: c.capacity_bps for c in channels}
    return alive, max_min_rates([f.channels for f in alive], capacity, [f.cap for f in alive])


operations = st.lists(st.one_of(
    st.tuples(st.just("start"), st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True),
              st.floats(1e3, 1e7), st.one_of(st.just(math.inf), st.floats(1e3, 1e7))),
    st.tuples(st.just("capacity"), st.integers(0, 4), st.floats(0.0, 1e7)),
    st.tuples(st.just("fail"), st.integers(0, 4)),
    st.tuples(st.just("cap"), st.integers(0, 39),
              st.one_of(st.just(math.inf), st.floats(1e3, 1e7))),
    st.tuples(st.just("wait"), st.floats(0.0, 2.0)),
), min_size=1, max_size=40)


def _play(ops, capacities, after_each, until=None):
    """Run ``ops`` on a fabric of 5 channels (link k owns channel k), calling
    ``after_each(channels, flows)`` once each operation's instant has settled; returns the
    channels and each flow's end (time, ok) by its start order."""
    env = simpy.Environment()
    fabric = Fabric(env)
    channels = [Channel(fabric, f"c{k}", capacities[k]) for k in range(5)]
    links = [object() for _ in range(5)]
    flows, ends = [], {}

    def driver():
        for op in ops:
            if op[0] == "start":
                _, path, nbits, cap = op
                flow = fabric.transmit([channels[k] for k in path], [links[k] for k in path],
                                       nbits, cap)
                flow.event.defused = True
                flow.event.callbacks.append(lambda e, key=len(flows): ends.setdefault(
                    key, (env.now, e.ok)))
                flows.append(flow)
            elif op[0] == "capacity":
                channels[op[1]].set_capacity(op[2])
            elif op[0] == "fail":
                channels[op[1]].fail(links[op[1]])
            elif op[0] == "cap":
                if flows:
                    fabric.set_cap(flows[op[1] % len(flows)], op[2])
            else:
                yield env.timeout(op[1])
            yield env.timeout(0)
            while not fabric.settled:  # the pass of this instant, after events queued before
                yield env.timeout(0)
            after_each(channels, flows)

    env.process(driver())
    env.run(until=until)
    return channels, ends


@settings(max_examples=200, deadline=None)
@given(operations, st.lists(st.floats(1e5, 1e7), min_size=5, max_size=5))
def test_incremental_rates_equal_a_solve_from_scratch(ops, capacities):
    def check(channels, flows):
        alive, expected = scratch_rates(channels, flows)
        for flow, rate in zip(alive, expected, strict=True):
            assert flow.rate == pytest.approx(rate, rel=1e-6, abs=1e-6)
        for c in channels:
            assert c.load == pytest.approx(sum(f.rate for f in c.flows), rel=1e-6, abs=1e-6)

    _play(ops, capacities, check, until=1000)


def _run_ops(ops, capacities) -> list:
    """Every flow's rate and progress after each operation, each flow's end (time, ok) and the
    channels' loads at the end, exactly."""
    seen = []
    channels, ends = _play(ops, capacities, lambda _, flows: seen.append(
        [(f.rate, f.sent_bits) for f in flows]))
    return seen + [sorted(ends.items())] + [[c.load for c in channels]]


@settings(max_examples=200, deadline=None)
@given(operations, st.lists(st.floats(1e5, 1e7), min_size=5, max_size=5))
def test_solving_one_class_directly_gives_the_solvers_very_floats(ops, capacities):
    """Fabric._alone_or_roomy (a pass with one class whose shared channels have room) must give
    the bits the general solver gives: rates, progress, loads and end times, exactly."""
    direct = _run_ops(ops, capacities)
    general = Fabric._alone_or_roomy
    try:
        Fabric._alone_or_roomy = lambda self, cls: False
        solved = _run_ops(ops, capacities)
    finally:
        Fabric._alone_or_roomy = general
    assert direct == solved


def test_a_flow_over_two_channels_runs_at_the_slower_and_frees_both():
    env = simpy.Environment()
    fabric = Fabric(env)
    fast, slow = Channel(fabric, "fast", 10e6), Channel(fabric, "slow", 2e6)
    done = {}

    def run(name, channels, nbits):
        yield fabric.transmit(channels, [], nbits).event
        done[name] = env.now

    env.process(run("long", [fast, slow], 4e6))  # 2 Mb/s: 2 s
    env.process(run("short", [fast], 8e6))  # the rest of fast: 8 Mb/s, then 10 after 2 s
    env.run()
    assert done["long"] == pytest.approx(2.0)
    assert done["short"] == pytest.approx(1.0)
    assert fast.load == 0 and slow.load == 0


def test_a_link_down_anywhere_on_the_path_fails_the_flow_and_frees_every_channel():
    env = simpy.Environment()
    fabric = Fabric(env)
    first, second = Channel(fabric, "first", 4e6), Channel(fabric, "second", 4e6)
    near, far = object(), object()
    long = fabric.transmit([first, second], [near, far], 8e6)  # shares second: 2 Mb/s
    local = fabric.transmit([second], [object()], 8e6)
    outcome = {}

    def watch(name, flow):
        try:
            yield flow.event
            outcome[name] = env.now
        except LinkDown as down:
            outcome[name] = ("failed", env.now, down.link is far, flow.sent_bits)

    env.process(watch("long", long))
    env.process(watch("local", local))
    env.timeout(1.0).callbacks.append(lambda _: second.fail(far))
    env.run()
    assert outcome["long"] == ("failed", 1.0, True, pytest.approx(2e6))
    assert outcome["local"] == pytest.approx(1.0 + 6e6 / 4e6)  # alone on second from 1 s
    assert first.load == 0 and second.load == 0 and not first.flows


def test_a_hundred_flows_on_one_channel_are_one_class_ending_as_processor_sharing():
    env = simpy.Environment()
    fabric = Fabric(env)
    cell = Channel(fabric, "cell", 1e6)
    sizes = [1e4 * (k + 1) for k in range(100)]
    ends = {}

    def run(k):
        yield fabric.transmit([cell], [object()], sizes[k]).event
        ends[k] = env.now

    for k in range(100):
        env.process(run(k))
    env.run()
    # processor sharing: the k-th smallest ends after the ones before, with n - k flows left
    expected, t, previous = [], 0.0, 0.0
    for k, size in enumerate(sizes):
        t += (size - previous) * (100 - k) / 1e6
        previous = size
        expected.append(t)
    assert [ends[k] for k in range(100)] == pytest.approx(expected, rel=1e-9)
    assert fabric.classes_solved <= 2 * fabric.recomputations  # one class, not 100 flows


def test_a_flow_due_within_the_wake_horizon_ends_there_at_any_clock_time():
    """At a clock of hours, the wake-up deems a flow due within 1e-12 of the clock (18.8 ns at
    18,779 s); the end check must agree, or the wake-up pops it, keeps it, re-pushes it and
    loops forever with the clock frozen (paper-fed-chs.yaml froze so at 18,779.2 s: 0.113
    bits left at 10 Mb/s, 11 ns, against a tolerance of 0.0066 bits)."""
    import signal

    def too_long(*_):
        raise TimeoutError("the fabric looped at a frozen clock")

    env = simpy.Environment(initial_time=18779.0)
    fabric = Fabric(env)
    first, second = Channel(fabric, "first", 10e6), Channel(fabric, "second", 10e6)
    done = {}

    def run(name, channel, nbits):
        yield fabric.transmit([channel], [], nbits).event
        done[name] = env.now

    env.process(run("a", first, 1e6))
    env.process(run("b", second, 1e6 + 0.113))  # due 11.3 ns after a
    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(10)
    try:
        env.run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert done["a"] == pytest.approx(18779.1, abs=1e-9)
    assert done["b"] == pytest.approx(18779.1, abs=1e-7)


# ----------------------------------------------------------------------- channel statistics


def _stats_run(starts, capacity=1e6, until=None, actions=()):
    """Flows (start_s, nbits, cap) on one channel of ``capacity``; ``actions``: (time_s, f)
    calls f(fabric, channel, flows) at time_s. Returns (env, channel, flows)."""
    env = simpy.Environment()
    fabric = Fabric(env)
    channel = Channel(fabric, "c", capacity)
    link = object()
    flows = []

    def start(at, nbits, cap):
        yield env.timeout(at)
        flow = fabric.transmit([channel], [link], nbits, cap)
        flow.event.defused = True
        flows.append(flow)

    def act(at, f):
        yield env.timeout(at)
        f(fabric, channel, flows)

    for at, nbits, cap in starts:
        env.process(start(at, nbits, cap))
    for at, f in actions:
        env.process(act(at, f))
    env.run(until=until)
    return env, channel, flows


def test_one_flow_busies_its_channel_for_its_bits_over_the_capacity():
    env, channel, _ = _stats_run([(1.0, 4e6, math.inf)])
    stats = channel.statistics(env.now)
    assert env.now == pytest.approx(5.0)
    assert stats.busy_s == pytest.approx(4.0)  # B / C
    assert stats.flow_s == pytest.approx(4.0) and stats.mean_flows == pytest.approx(1.0)
    assert stats.peak_flows == 1 and stats.flows_now == 0
    assert stats.carried_bits == 4e6 and stats.wasted_bits == 0.0
    assert stats.utilisation(4.0) == pytest.approx(1.0)
    assert stats.utilisation(8.0) == pytest.approx(0.5)  # carried / (capacity x time)


def test_two_concurrent_flows_peak_at_two_and_average_their_overlap():
    # B and 2B together at C: the first ends at 2B/C, the second alone until 3B/C
    env, channel, _ = _stats_run([(0.0, 1e6, math.inf), (0.0, 2e6, math.inf)])
    stats = channel.statistics(env.now)
    assert stats.busy_s == pytest.approx(3.0)
    assert stats.flow_s == pytest.approx(5.0)
    assert stats.mean_flows == pytest.approx(5.0 / 3.0)
    assert stats.peak_flows == 2
    assert stats.carried_bits == 3e6


def test_a_cancelled_flow_carried_bits_are_wasted():
    def cancel(fabric, channel, flows):
        fabric.cancel(flows[0])

    env, channel, flows = _stats_run([(0.0, 4e6, math.inf)], actions=[(1.5, cancel)])
    stats = channel.statistics(env.now)
    assert stats.busy_s == pytest.approx(1.5)
    assert stats.carried_bits == pytest.approx(1.5e6)
    assert stats.wasted_bits == pytest.approx(1.5e6) == flows[0].sent_bits


def test_a_flow_failed_by_a_link_going_down_wastes_its_bits():
    def fail(fabric, channel, flows):
        fabric.fail_link_on(channel, flows[0].links[0])

    env, channel, _ = _stats_run([(0.0, 4e6, math.inf), (0.0, 1e6, math.inf)],
                                 actions=[(1.0, fail)])
    stats = channel.statistics(env.now)
    assert stats.wasted_bits == pytest.approx(1e6)  # 0.5 Mb each by 1 s
    assert stats.carried_bits == pytest.approx(1e6)


def test_capacity_changes_are_integrated_over_the_busy_time():
    def halve(fabric, channel, flows):
        channel.set_capacity(0.5e6)

    env, channel, _ = _stats_run([(0.0, 2e6, math.inf)], actions=[(1.0, halve)])
    stats = channel.statistics(env.now)
    assert env.now == pytest.approx(3.0)  # 1 Mb in 1 s, then 1 Mb at 0.5 Mb/s
    assert stats.capacity_bit == pytest.approx(1e6 + 2 * 0.5e6)
    assert stats.utilisation(stats.busy_s) == pytest.approx(1.0)


def test_a_cap_change_moves_the_flow_without_counting_it_twice():
    def recap(fabric, channel, flows):
        fabric.set_cap(flows[0], 0.25e6)

    env, channel, _ = _stats_run([(0.0, 1e6, 0.5e6)], actions=[(1.0, recap)])
    stats = channel.statistics(env.now)
    assert env.now == pytest.approx(3.0)
    assert stats.peak_flows == 1 and stats.busy_s == pytest.approx(3.0)
    assert stats.carried_bits == 1e6 and stats.wasted_bits == 0.0
    assert stats.utilisation(3.0) == pytest.approx(1e6 / 3e6)


def test_statistics_mid_flight_count_the_bits_sent_so_far():
    env, channel, _ = _stats_run([(0.0, 4e6, math.inf)], until=2.5)
    stats = channel.statistics(env.now)
    assert stats.busy_s == pytest.approx(2.5) and stats.flows_now == 1
    assert stats.carried_bits == pytest.approx(2.5e6)


@settings(max_examples=100, deadline=None)
@given(operations, st.lists(st.floats(1e5, 1e7), min_size=5, max_size=5))
def test_statistics_add_up_over_random_operations(ops, capacities):
    """On every channel: busy time within the flow-seconds, at most peak times the busy time;
    carried bits the bits its flows sent, wasted those of failed ones."""
    channels, ends = _run_stats_ops(ops, capacities)
    for channel, flows in channels:
        stats = channel.statistics(channel.fabric.env.now)
        assert stats.flows_now == 0
        assert stats.busy_s <= stats.flow_s * (1 + 1e-9) + 1e-12
        assert stats.flow_s <= stats.peak_flows * stats.busy_s * (1 + 1e-9) + 1e-12
        assert stats.carried_bits == pytest.approx(math.fsum(f.sent_bits for f in flows),
                                                   rel=1e-9, abs=1e-6)
        failed = [f for f in flows if f in ends and not ends[f]]
        assert stats.wasted_bits == pytest.approx(math.fsum(f.sent_bits for f in failed),
                                                  rel=1e-9, abs=1e-6)


def _run_stats_ops(ops, capacities):
    """``ops`` played to the end on 5 channels: [(channel, its flows)], flow -> ended ok."""
    env = simpy.Environment()
    fabric = Fabric(env)
    channels = [Channel(fabric, f"c{k}", capacities[k]) for k in range(5)]
    links = [object() for _ in range(5)]
    flows, ends = [], {}

    def driver():
        for op in ops:
            if op[0] == "start":
                _, path, nbits, cap = op
                flow = fabric.transmit([channels[k] for k in path], [links[k] for k in path],
                                       nbits, cap)
                flow.event.defused = True
                flow.event.callbacks.append(lambda e, f=flow: ends.setdefault(f, e.ok))
                flows.append(flow)
            elif op[0] == "capacity":
                channels[op[1]].set_capacity(max(op[2], 1e3))  # 0 would never end
            elif op[0] == "fail":
                channels[op[1]].fail(links[op[1]])
            elif op[0] == "cap":
                if flows:
                    fabric.set_cap(flows[op[1] % len(flows)], op[2])
            else:
                yield env.timeout(op[1])
        yield env.timeout(0)

    env.process(driver())
    env.run()
    return [(c, [f for f in flows if c in f.channels]) for c in channels], ends


# ------------------------------------------------------------------ time bins and media


def test_time_bins_spread_an_amount_evenly_and_stay_bounded():
    from netfl.network.time_bins import FIRST_BIN_S, MAX_BINS, TimeBins

    bins = TimeBins()
    bins.add(0.0, 4 * FIRST_BIN_S, 8.0)  # four bins, 2 each
    assert bins.amounts() == pytest.approx([2.0] * 4 + [0.0] * (MAX_BINS - 4))
    bins.add(FIRST_BIN_S / 2, FIRST_BIN_S / 2, 1.0)  # an instant: its bin
    assert bins.amounts()[0] == pytest.approx(3.0)
    bins.add(0.0, 100 * MAX_BINS * FIRST_BIN_S, 5.0)  # far past the last bin: merged
    assert len(bins.amounts()) == MAX_BINS and bins.width_s >= 100 * FIRST_BIN_S
    assert math.fsum(bins.amounts()) == pytest.approx(14.0)
    assert sum(bins.at_width(bins.width_s * 4)) == pytest.approx(14.0)


def test_a_channel_bins_each_flows_bits_over_its_time_on_it():
    # 4 Mb at 1 Mb/s from 1 s to 5 s, and one still on it at 8 s (2 Mb of 6 sent)
    env, channel, _ = _stats_run([(1.0, 4e6, math.inf), (6.0, 6e6, math.inf)], until=8.0)
    bins = channel.time_bins(env.now)
    assert math.fsum(bins.amounts()) == pytest.approx(6e6)
    per_s = bins.at_width(1.0)
    assert per_s[:8] == pytest.approx([0, 1e6, 1e6, 1e6, 1e6, 0, 1e6, 1e6])
    assert channel.bins is not bins  # reading copies: nothing changes
    assert math.fsum(channel.bins.amounts()) == pytest.approx(4e6)


def test_a_medium_sums_its_channels_flows_capacity_and_bits():
    from netfl.network.flow import Medium

    env = simpy.Environment()
    fabric = Fabric(env)
    medium = Medium(fabric, "beam up")
    a, b = Channel(fabric, "a", 1e6), Channel(fabric, "b", 3e6)
    a.medium = b.medium = medium
    link = object()

    def start(at, channel, nbits):
        yield env.timeout(at)
        fabric.transmit([channel], [link], nbits).event.defused = True

    env.process(start(0.0, a, 2e6))  # 0-2 s on a, alone
    env.process(start(1.0, b, 3e6))  # two on b from 1 s, 1.5 Mb/s each: both end at 3 s
    env.process(start(1.0, b, 3e6))
    env.run()
    stats = medium.statistics(env.now)
    assert stats.busy_s == pytest.approx(3.0)
    assert stats.peak_flows == 3 and stats.flows_now == 0
    assert stats.flow_s == pytest.approx(1 + 3 + 2)
    # the capacity of its busy channels: 1, then 1 + 3, then 3 Mb/s
    assert stats.capacity_bit == pytest.approx(1e6 + 4e6 + 3e6)
    assert stats.carried_bits == pytest.approx(8e6)
    assert medium.capacity_bps == 0.0 and not medium.active
    assert math.fsum(medium.time_bins(env.now).amounts()) == pytest.approx(8e6)
    assert list(fabric.channels_used)[:2] == [medium, a]


def test_a_beams_medium_counts_its_users_shares_and_changes_no_rate():
    from netfl.network.beam import ScheduledPool

    def run(with_medium):
        env = simpy.Environment()
        fabric = Fabric(env)
        pool = ScheduledPool(fabric, "e0 beam 0 up")
        users = [pool.member(f"c{k}->e0", rate) for k, rate in enumerate((4e6, 2e6))]
        if not with_medium:
            for channel in users:
                channel.medium = None
        ends = {}

        def send(k):
            flow = fabric.transmit([users[k]], [object()], 4e6)
            yield flow.event
            ends[k] = env.now

        for k in range(2):
            env.process(send(k))
        env.run()
        return ends, pool.medium.statistics(env.now)

    ends, stats = run(True)
    assert ends == run(False)[0]  # the same floats: the medium only reads
    # both at half their rates (2 and 1 Mb/s) until c0 ends at 2 s; c1 alone at 2 Mb/s
    assert ends == pytest.approx({0: 2.0, 1: 3.0})
    assert stats.busy_s == pytest.approx(3.0) and stats.peak_flows == 2
    assert stats.capacity_bit == pytest.approx(3e6 * 2 + 2e6 * 1)
    assert stats.carried_bits == pytest.approx(8e6)
    assert stats.utilisation(3.0) == pytest.approx(1.0)


@given(st.lists(st.tuples(st.floats(0, 50), st.floats(0, 50), st.floats(0, 1e6)),
                min_size=1, max_size=30))
@settings(max_examples=60, deadline=None)
def test_time_bins_equal_a_spread_computed_bin_by_bin(spans):
    from netfl.network.time_bins import TimeBins

    bins = TimeBins()
    for a, b, amount in spans:
        bins.add(min(a, b), max(a, b), amount)
    width, amounts = bins.width_s, bins.amounts()
    expected = [0.0] * len(amounts)
    for a, b, amount in spans:
        start, end = min(a, b), max(a, b)
        if end <= start:
            last = int(end / width)
            expected[last] += amount
            continue
        for k in range(len(expected)):
            overlap = min(end, (k + 1) * width) - max(start, k * width)
            if overlap > 0:
                expected[k] += amount * overlap / (end - start)
    total = sum(amount for _, _, amount in spans)
    assert amounts == pytest.approx(expected, rel=1e-5, abs=1e-6 * total + 1e-3)  # float32
