"""JobSlots against SimPy's Resource: the same events in the same order, to the bit."""

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.compute.jobs import JobSlots


def simpy_job(env, resource, duration):
    with resource.request() as slot:
        yield slot
        yield env.timeout(duration)


def timeline(use_slots: bool, capacity: int, jobs, interrupts) -> tuple[list, int]:
    """Run ``jobs`` (start, duration, zero-delay yields before asking) on one node; interrupt
    the k-th job at each (k, time) of ``interrupts``; every job also logs, after each of its
    steps, a zero-delay event of its own, so a change in the order of same-time events shows.
    Returns the log and the number of events scheduled."""
    env = simpy.Environment()
    node = JobSlots(env, capacity) if use_slots else simpy.Resource(env, capacity)
    log, queued = [], set()  # queued: the jobs asking for or holding a slot now

    def job(k, start, duration, spins):
        yield env.timeout(start)
        for _ in range(spins):
            yield env.timeout(0)
        log.append(("ask", k, env.now))
        queued.add(k)
        try:
            yield from (node.run(duration) if use_slots else simpy_job(env, node, duration))
            log.append(("done", k, env.now))
        except simpy.Interrupt:
            log.append(("interrupted", k, env.now))
        queued.discard(k)
        yield env.timeout(0)
        log.append(("after", k, env.now))

    processes = [env.process(job(k, *spec)) for k, spec in enumerate(jobs)]

    def interrupter(k, at):
        yield env.timeout(at)
        if k in queued:
            queued.discard(k)  # one interrupt per job
            processes[k].interrupt()

    for k, at in interrupts:
        env.process(interrupter(k % len(jobs), at))
    env.run()
    return log, next(env._eid)


job_specs = st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 1.5, 3.0]),
                               st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.integers(0, 2)),
                     min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 3), jobs=job_specs,
       interrupts=st.lists(st.tuples(st.integers(0, 11), st.sampled_from([0.5, 1.0, 2.0, 2.5])),
                           max_size=3))
def test_the_same_events_in_the_same_order_as_simpy_resource(capacity, jobs, interrupts):
    assert timeline(True, capacity, jobs, interrupts) == timeline(False, capacity, jobs,
                                                                   interrupts)


def test_jobs_queue_first_come_first_served():
    log, _ = timeline(True, 1, [(0.0, 2.0, 0), (0.5, 1.0, 0), (1.0, 1.0, 0)], [])
    assert [(k, t) for kind, k, t in log if kind == "done"] == [(0, 2.0), (1, 3.0), (2, 4.0)]


def test_an_interrupted_waiter_leaves_the_queue():
    log, _ = timeline(True, 1, [(0.0, 2.0, 0), (0.0, 1.0, 0), (0.0, 1.0, 0)], [(1, 1.0)])
    assert ("interrupted", 1, 1.0) in log
    assert [(k, t) for kind, k, t in log if kind == "done"] == [(0, 2.0), (2, 3.0)]


def test_at_least_one_slot():
    with pytest.raises(ValueError, match="at least one job slot"):
        JobSlots(simpy.Environment(), 0)
