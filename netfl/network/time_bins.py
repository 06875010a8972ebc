"""Amounts per time bin in bounded memory: a channel's carried bits over time
(``flow.py``'s statistics; links.png)."""

from __future__ import annotations

from array import array

MAX_BINS = 64  # time bins per channel: 64 floats, whatever the run's length
FIRST_BIN_S = 0.0625  # a power of two: doubled widths stay exact in binary


class TimeBins:
    """Amounts (bits) per time bin from time 0, in at most ``MAX_BINS`` bins of ``width_s``
    seconds each: when an amount falls past the last bin, neighbouring bins merge pairwise and
    the width doubles (from ``FIRST_BIN_S``), so the memory is bounded whatever the run's length.
    An amount spread over [start, end] is shared among the bins in proportion to their overlap
    with it (evenly over time)."""

    __slots__ = ("width_s", "values")

    def __init__(self, now: float = 0.0):
        """Empty bins, as wide as the bins of one made at time 0 are by ``now``."""
        width = FIRST_BIN_S
        while now >= width * MAX_BINS:
            width *= 2
        self.width_s = width
        self.values = array("d")

    def add(self, start_s: float, end_s: float, amount: float) -> None:
        """Add ``amount`` spread evenly over [``start_s``, ``end_s``] (at ``end_s`` if empty)."""
        width = self.width_s
        while end_s >= width * MAX_BINS:
            self.coarsen()
            width = self.width_s
        values = self.values
        first, last = int(start_s / width), int(end_s / width)
        if last > first and last * width == end_s:
            last -= 1  # it ends on a bin's edge: nothing in the next bin
        if last >= len(values):
            values.frombytes(bytes(8 * (last + 1 - len(values))))  # zeros
        if first >= last:  # (an empty interval too: end_s <= start_s gives last <= first)
            values[last] += amount
            return
        per_s = amount / (end_s - start_s)
        values[first] += per_s * ((first + 1) * width - start_s)
        for k in range(first + 1, last):
            values[k] += per_s * width
        values[last] += per_s * (end_s - last * width)

    def coarsen(self) -> None:
        """Merge neighbouring bins pairwise: half as many, twice as wide."""
        values = self.values
        if len(values) % 2:
            values.append(0.0)
        self.values = array("d", (values[k] + values[k + 1] for k in range(0, len(values), 2)))
        self.width_s *= 2

    def copy(self) -> TimeBins:
        other = TimeBins()
        other.width_s, other.values = self.width_s, array("d", self.values)
        return other

    def at_width(self, width_s: float) -> list[float]:
        """The amounts per bin of ``width_s`` (this width times a power of two, not less)."""
        copy = self.copy()
        while copy.width_s < width_s * (1 - 1e-12):
            copy.coarsen()
        return list(copy.values)
