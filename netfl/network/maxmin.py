"""Max-min fair rates by progressive filling: pure functions (docs/models/network.md).

Every flow crosses a set of channels (one direction of a link, or a shared radio cell) and may
have its own rate cap (a TCP window, a receive window). The max-min fair allocation raises every
rate together; a channel that fills freezes the flows crossing it at the level reached (it is
their bottleneck), a flow that reaches its cap freezes at its cap, and the others keep rising
(Bertsekas and Gallager, Data Networks, 6.5.2; the model of SimGrid's flow-level solver).

Properties the tests check: no channel carries more than its capacity; every flow is at its cap
or crosses a channel that is full and on which no flow has a larger rate (its bottleneck); a
single channel shared by n uncapped flows gives each capacity / n.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Mapping, Sequence

_RELATIVE_TOLERANCE = 1e-12


def max_min_rates(paths: Sequence[Sequence[Hashable]], capacity: Mapping[Hashable, float],
                  caps: Sequence[float] | None = None,
                  counts: Sequence[int] | None = None) -> list[float]:
    """The max-min fair rate (bit/s) of each flow.

    ``paths[i]``: the channels flow i crosses (each at most once); ``capacity[c]``: channel c's
    capacity in bit/s (>= 0); ``caps[i]``: flow i's own upper bound (``math.inf`` for none);
    ``counts[i]``: how many identical flows entry i stands for (1 each by default; the rate
    returned is each one's). A flow with no channel gets its cap (which must then be finite).
    Cost: O((sum of path lengths + channels) log channels).
    """
    n = len(paths)
    caps = [math.inf] * n if caps is None else list(caps)
    counts = [1] * n if counts is None else list(counts)
    rates = [0.0] * n
    frozen = [False] * n
    flows_on: dict[Hashable, list[int]] = {}
    for i, path in enumerate(paths):
        if not path:
            if not math.isfinite(caps[i]):
                raise ValueError(f"flow {i} crosses no channel and has no cap")
            rates[i], frozen[i] = caps[i], True
            continue
        for channel in path:
            flows_on.setdefault(channel, []).append(i)
    left = {c: max(float(capacity[c]), 0.0) for c in flows_on}
    count = {c: sum(counts[i] for i in f) for c, f in flows_on.items()}
    order = {c: k for k, c in enumerate(flows_on)}  # ties broken by first appearance
    shares = [(left[c] / count[c], order[c], c) for c in flows_on]
    heapq.heapify(shares)
    by_cap = sorted((cap, i) for i, cap in enumerate(caps) if not frozen[i] and cap < math.inf)
    next_cap = 0

    def freeze(i: int, rate: float) -> None:
        rates[i], frozen[i] = rate, True
        for c in paths[i]:
            left[c] = max(left[c] - rate * counts[i], 0.0)
            count[c] -= counts[i]
            if count[c]:
                heapq.heappush(shares, (left[c] / count[c], order[c], c))

    while True:
        while shares:  # drop stale entries: a channel's share only grows as flows freeze
            share, _, c = shares[0]
            if count[c] and share == left[c] / count[c]:
                break
            heapq.heappop(shares)
        while next_cap < len(by_cap) and frozen[by_cap[next_cap][1]]:
            next_cap += 1
        channel_level = shares[0][0] if shares else math.inf
        cap_level = by_cap[next_cap][0] if next_cap < len(by_cap) else math.inf
        if channel_level == math.inf and cap_level == math.inf:
            break
        if cap_level < channel_level:
            freeze(by_cap[next_cap][1], cap_level)
            continue
        _, _, c = heapq.heappop(shares)
        level = channel_level * (1.0 + _RELATIVE_TOLERANCE)
        for i in flows_on[c]:
            if not frozen[i]:
                freeze(i, min(channel_level, caps[i]) if caps[i] <= level else channel_level)
    return rates
