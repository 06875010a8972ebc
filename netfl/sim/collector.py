"""The cyclic garbage collector's settings while a run's events are processed."""

from __future__ import annotations

import contextlib
import gc

# young, middle and old generation thresholds of the cyclic collector while a run runs
RUN_GC_THRESHOLDS = (100_000, 50, 100)


@contextlib.contextmanager
def collector_for_a_run():
    """The cyclic garbage collector's settings while a run's events are processed (restored
    after): what was built before is frozen, and the thresholds are RUN_GC_THRESHOLDS.
    (bench_scale's plain-SimPy floor runs under it too, so that its figures compare.)"""
    # The world, data and model built so far live for the whole run: left to the cyclic
    # collector, every full collection would walk them again (33 times in a run of 10,000
    # clients, 20% of its time). Frozen, they are skipped until the run ends (no collect
    # first: a full collection costs more than a short run; unfreezing hands any garbage
    # among them back to the collector). The run's own objects (a process, events and
    # records per transfer) outlive the young generation by the thousand while a round is
    # in flight, so the collector's default thresholds (700, 10, 10) walk them over and
    # over: a run of 10,000 clients spent 45% of its time there. Higher thresholds keep
    # the collector (cycles are rare here: a failed transfer's traceback) at a few %.
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
