"""Amounts per time bin in bounded memory: a channel's carried bits over time
(``flow.py``'s statistics; links.png)."""

from __future__ import annotations

from array import array

import numpy as np

MAX_BINS = 64  # time bins per channel (even), whatever the run's length
FIRST_BIN_S = 1.0  # the finest bins, s (a power of two: doubled widths stay exact in binary)
_TYPE = "f"  # float32: 256 bytes per 64 bins (a heat map's precision; totals are kept apart)


class TimeBins:
    """Amounts (bits) per time bin from time 0, in ``MAX_BINS`` bins of ``width_s`` seconds
    each: when an amount falls past the last bin, neighbouring bins merge (pairwise, or by the
    power of two needed) and the width grows as much (from ``FIRST_BIN_S``), so the memory is
    bounded whatever the run's length. An amount spread over [start, end] is shared among the
    bins in proportion to their overlap with it (evenly over time), at a cost that does not grow
    with the bins it spans: its partial first and last bins go to ``values``, the bins between
    as a rate that starts and stops (``rates``: its changes per bin, added up when read).
    ``amounts()``: the amounts per bin (bins past the last amount hold 0). Stored as float32:
    about 7 significant digits per bin."""

    __slots__ = ("width_s", "limit_s", "values", "rates")

    def __init__(self, now: float = 0.0):
        """Empty bins, as wide as the bins of one made at time 0 are by ``now``."""
        width = FIRST_BIN_S
        while now >= width * MAX_BINS:
            width *= 2
        self.width_s, self.limit_s = width, width * MAX_BINS
        self.values = array(_TYPE, _ZEROS)
        self.rates: array | None = None  # None until an amount spans three bins or more

    def add(self, start_s: float, end_s: float, amount: float) -> None:
        """Add ``amount`` spread evenly over [``start_s``, ``end_s``] (at ``end_s`` if empty)."""
        if end_s >= self.limit_s:
            self.coarsen(end_s)
        width = self.width_s
        first, last = int(start_s / width), int(end_s / width)
        if last > first and last * width == end_s:
            last -= 1  # it ends on a bin's edge: nothing in the next bin
        values = self.values
        if first >= last:  # (an empty interval too: end_s <= start_s gives last <= first)
            values[last] += amount
            return
        per_s = amount / (end_s - start_s)
        values[first] += per_s * ((first + 1) * width - start_s)
        values[last] += per_s * (end_s - last * width)
        if last > first + 1:  # the whole bins between: per_s from bin first + 1 to last - 1
            rates = self.rates
            if rates is None:
                rates = self.rates = array(_TYPE, _ZEROS)
            rates[first + 1] += per_s
            rates[last] -= per_s

    def _amounts(self) -> np.ndarray:
        values = np.frombuffer(self.values, dtype=np.float32).astype(float)
        if self.rates is None:
            return values
        return values + np.cumsum(np.frombuffer(self.rates, dtype=np.float32)) * self.width_s

    def amounts(self) -> list[float]:
        """The amount in each bin."""
        return self._amounts().tolist()

    def coarsen(self, until_s: float | None = None) -> None:
        """Merge neighbouring bins: pairwise, or (``until_s``) as many as it takes for
        ``until_s`` to fall within the last bin."""
        factor = 2
        if until_s is not None:
            while until_s >= self.limit_s * factor:
                factor *= 2
        amounts = self._amounts()
        merged = (amounts.reshape(-1, factor).sum(axis=1) if factor < MAX_BINS
                  else amounts.sum(keepdims=True))
        values = np.zeros(MAX_BINS, dtype=np.float32)
        values[:len(merged)] = merged
        self.values = array(_TYPE, values.tobytes())
        self.rates = None
        self.width_s *= factor
        self.limit_s *= factor

    def copy(self) -> TimeBins:
        other = TimeBins()
        other.width_s, other.limit_s = self.width_s, self.limit_s
        other.values = array(_TYPE, self.values)
        other.rates = None if self.rates is None else array(_TYPE, self.rates)
        return other

    def at_width(self, width_s: float) -> list[float]:
        """The amounts per bin of ``width_s`` (this width times a power of two, not less)."""
        copy = self.copy()
        while copy.width_s < width_s * (1 - 1e-12):
            copy.coarsen()
        return copy.amounts()


_ZEROS = array(_TYPE, bytes(4 * MAX_BINS))
