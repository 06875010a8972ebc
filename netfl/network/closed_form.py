"""Transfers in closed form: when a transfer's times follow from its path alone, without
simulating its events (pure; docs/models/network.md).

A pipelined transfer (``tcp`` or ``fluid``, ``transport.py``) that is the only flow on every
channel of its path from its first bit to its last runs at ``min(cap, window / rtt, bottleneck)``
in each slow-start round and at ``min(cap, bottleneck)`` after, so its set-up, rounds, last bit
and arrival are a short recurrence over the rounds. The same holds for a cohort of ``n``
identical flows that start together on the same channels and have them to themselves: each
gets ``bottleneck / n`` (their class's max-min share), so a cohort is one flow on a channel of a
``n``-th of the capacity. :func:`pipelined_times` evaluates the recurrence for many transfers at
once (numpy arrays), equal to the per-event path's times to float rounding (a test holds them
to 1e-9 relative).

Used where a run advances clients in cohorts instead of one SimPy process each; the conditions
under which a transfer has its path to itself are the caller's to establish.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from netfl.network.transport import slow_start_windows

# a round "kept up" when it sent its window to this relative tolerance (PipelinedSend's)
KEPT_UP = 1 - 1e-9


@dataclass(frozen=True)
class PathTiming:
    """A path's timing figures as the pipelined transport derives them: ``one_way_s`` (the
    links' delays), ``rtt_s`` (twice that plus one segment's serialisation per hop),
    ``latency_s`` (from the last bit sent to its arrival: the delays plus one segment's
    store-and-forward per hop but the bottleneck) and ``bottleneck_bps``."""

    one_way_s: float
    rtt_s: float
    latency_s: float
    bottleneck_bps: float


def path_timing(delays_s, capacities_bps, segment_bits: float) -> PathTiming:
    """The timing of a path of links with ``delays_s`` whose channels (in the direction sent)
    carry ``capacities_bps``; ``segment_bits`` 0 for ``fluid``."""
    one_way = float(sum(delays_s))
    per_packet = [segment_bits / c for c in capacities_bps if c > 0]
    latency = one_way + (sum(per_packet) - max(per_packet) if per_packet else 0.0)
    return PathTiming(one_way, 2.0 * one_way + sum(per_packet), latency,
                      float(min(capacities_bps)))


def slow_start_bits(initial_window: int, delayed_ack: int, segment_bits: float,
                    largest_segments: float, rounds: int) -> np.ndarray:
    """The bits TCP may send in each of the first ``rounds`` slow-start rounds: its windows
    (``transport.slow_start_windows``), at most ``largest_segments`` each."""
    windows = itertools.islice(slow_start_windows(initial_window, delayed_ack), rounds)
    return np.array([min(w, largest_segments) * segment_bits for w in windows], dtype=float)


def pipelined_times(wire_bits, bottleneck_bps, rtt_s, latency_s, handshake_s,
                    windows_bits: np.ndarray | None, cap_bps=np.inf):
    """Offsets from each transfer's start (seconds): when its first bit is sent, its last bit
    is sent, and its last bit arrives, for transfers each alone on its path (module
    docstring). Arguments broadcast against each other (numpy arrays or scalars);
    ``windows_bits``: the bits of each slow-start round (``slow_start_bits``; None: no slow
    start, as ``fluid``), long enough that the last one covers the largest transfer.

    Returns three float arrays of the broadcast shape."""
    wire, capacity, rtt, latency, handshake, cap = np.broadcast_arrays(
        *(np.asarray(a, dtype=float) for a in (wire_bits, bottleneck_bps, rtt_s, latency_s,
                                                handshake_s, cap_bps)))
    first = handshake.copy()
    full_rate = np.minimum(cap, capacity)
    if windows_bits is None or len(windows_bits) == 0:
        last = first + wire / full_rate
        return first, last, last + latency
    t, sent = first.copy(), np.zeros_like(wire)
    ramping = windows_bits[0] < wire
    done_at = np.where(ramping, np.nan, first + wire / full_rate)
    for k, window in enumerate(windows_bits[:-1]):
        if not ramping.any():
            break
        rate = np.minimum(np.minimum(cap, window / rtt), capacity)
        # a round sends at most its window, less than what is left: it cannot end the flow
        round_bits = np.where(ramping, rate * rtt, 0.0)
        sent = sent + round_bits
        t = np.where(ramping, t + rtt, t)
        kept_up = round_bits >= window * KEPT_UP
        still = ramping & kept_up & (windows_bits[k + 1] < wire - sent)
        ending = ramping & ~still
        done_at = np.where(ending, t + (wire - sent) / full_rate, done_at)
        ramping = still
    if ramping.any():
        raise ValueError("windows_bits is too short: its last window must cover the largest "
                         "transfer")
    return first, done_at, done_at + latency
