"""On/off processes: the one mechanism behind link outages and client dropouts.

A process calls ``set_state(up: bool)`` at each change. Two kinds:

* random: alternating exponential up and down periods with the given means (an alternating
  renewal process; the long-run fraction of time up is mean_up / (mean_up + mean_down));
* schedule: explicit (down_at_s, up_at_s) intervals.

Both start in the up state at time 0.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable

import numpy as np
import simpy


def random_onoff(
    env: simpy.Environment,
    rng: np.random.Generator,
    mean_up_s: float,
    mean_down_s: float,
    set_state: Callable[[bool], None],
) -> Generator:
    """Alternate exponential up (mean ``mean_up_s``) and down (mean ``mean_down_s``) periods."""
    while True:
        yield env.timeout(rng.exponential(mean_up_s))
        set_state(False)
        yield env.timeout(rng.exponential(mean_down_s))
        set_state(True)


def scheduled_onoff(
    env: simpy.Environment,
    intervals: Iterable[tuple[float, float]],
    set_state: Callable[[bool], None],
) -> Generator:
    """Go down at each ``down_at_s`` and back up at ``up_at_s`` (intervals sorted, disjoint);
    an ``up_at_s`` of infinity: down for good."""
    for down_at, up_at in sorted(intervals):
        if down_at > env.now:
            yield env.timeout(down_at - env.now)
        set_state(False)
        if up_at == float("inf"):
            return
        if up_at > env.now:
            yield env.timeout(up_at - env.now)
        set_state(True)


def check_intervals(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sort intervals and raise ValueError unless each has 0 <= down < up and none overlap."""
    ordered = sorted((float(a), float(b)) for a, b in intervals)
    previous_up = -np.inf
    for down_at, up_at in ordered:
        if not 0 <= down_at < up_at:
            raise ValueError(f"interval ({down_at}, {up_at}) must have 0 <= down < up")
        if down_at < previous_up:
            raise ValueError(f"interval ({down_at}, {up_at}) overlaps the one before it")
        previous_up = up_at
    return ordered
