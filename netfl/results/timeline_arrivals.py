"""Which transfers carry a model, and where each model a node sent came from: the flow arrows
and the waits of netfl.results.timeline, read from a run's event table."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import NamedTuple

import pandas as pd

TIERS = ("client", "edge", "cloud")  # a model transfer's tag names two: "client->edge"


def carries_model(tag: str) -> bool:
    """Whether a transfer's tag is a model's (``edge->cloud``): not secure aggregation's
    shares (``secagg client->edge``) nor the rest of a resumed upload (``resumed-part``)."""
    ends = str(tag).split("->")
    return len(ends) == 2 and ends[0] in TIERS and ends[1] in TIERS


class Arrival(NamedTuple):
    """A model delivered into ``dst``: its transfer's id, its sender, and when it began and
    ended (simulated seconds)."""

    transfer: int
    src: str
    dst: str
    begin: float
    end: float


class Arrivals:
    """The models delivered into each node, in time order: the last one before a node sends a
    model is the one that model was made from (an edge server's last client upload before its
    aggregate leaves; the hand-over that brought the model before an edge server's
    broadcast); the last n before an aggregation of n updates are what it waited for."""

    def __init__(self, events: pd.DataFrame):
        self._by_node: dict[str, tuple[list[float], list[Arrival]]] = {}
        ends = events[events["kind"] == "transfer_end"] if len(events) else events
        for row in records(ends):  # in time order
            if carries_model(row["tag"]):
                t = float(row["time_s"])
                times, items = self._by_node.setdefault(row["dst"], ([], []))
                times.append(t)
                items.append(Arrival(int(row["transfer_id"]), row["src"], row["dst"],
                                     t - float(row["duration_s"]), t))

    def awaited(self, node: str, t: float, updates: int) -> tuple[Arrival, Arrival] | None:
        """The first and the last of the ``updates`` models delivered into ``node`` last by
        ``t`` (an aggregation's start), where they differ in time: the node had some in hand
        and waited for the rest; None where it did not wait. (Where one node aggregates for
        several groups at once, Group-FEL's, the last ``updates`` deliveries may mix them: the
        event table does not say which group a transfer served.)"""
        times, items = self._by_node.get(node, ((), ()))
        last = bisect.bisect_right(times, _later(t))
        first = last - updates
        if updates < 2 or first < 0 or times[last - 1] <= times[first]:
            return None
        return items[first], items[last - 1]

    def before(self, node: str, t: float) -> Arrival | None:
        """The last model delivered into ``node`` by time ``t``, or None."""
        times, items = self._by_node.get(node, ((), ()))
        k = bisect.bisect_right(times, _later(t))
        return items[k - 1] if k else None


def records(frame: pd.DataFrame, chunk: int = 20_000) -> Iterator[dict]:
    """``frame``'s rows as dicts, a chunk at a time (never all of them at once)."""
    for start in range(0, len(frame), chunk):
        yield from frame.iloc[start:start + chunk].to_dict("records")


def _later(t: float) -> float:
    """``t`` and the instants that rounding makes of it: a transfer's start is read back as
    its end less its duration, a few ulps off the delivery it followed at once."""
    return t + 1e-9 * max(1.0, abs(t))
