"""Confidence intervals for comparisons over seeds: Student t on one group's runs, and paired t on
the differences between two groups at the seeds both have.

Every algorithm run at one seed sees the same world and the same data partition (common random
numbers), so the difference between two algorithms at one seed is free of the seed's own luck:
the paired interval is usually much narrower than the two groups' intervals, and can exclude 0
where those overlap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A mean and the half-width of its two-sided 95% interval (Student t, n - 1 degrees of
    freedom) over ``n`` values. ``half`` is NaN where there is no interval (n < 2); ``mean`` is
    NaN where n = 0."""

    mean: float
    half: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half

    @property
    def high(self) -> float:
        return self.mean + self.half

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or below 0 (False without an interval)."""
        return not math.isnan(self.half) and (self.low > 0 or self.high < 0)


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided Student t quantile for ``df`` degrees of freedom (12.706 for df=1 at 95%)."""
    from scipy.stats import t  # scipy comes with scikit-learn; imported late: it is slow

    return float(t.ppf(0.5 + confidence / 2, df))


def t_interval(values: Iterable[float]) -> Interval:
    """Mean and 95% half-width t(0.975, n-1) * s / sqrt(n) of the values that are not NaN or
    None (s: sample standard deviation, ddof=1). One value: no interval (NaN half); none: NaN
    mean. A spread of exactly 0 gives a half-width of 0."""
    array = np.array([math.nan if v is None else float(v) for v in values], dtype=float)
    present = array[~np.isnan(array)]
    n = len(present)
    if n == 0:
        return Interval(math.nan, math.nan, 0)
    mean = float(present.mean())
    if n == 1:
        return Interval(mean, math.nan, 1)
    std = float(present.std(ddof=1))
    return Interval(mean, t_quantile(n - 1) * std / math.sqrt(n), n)


def paired_values(values: Mapping[object, float | None],
                  baseline: Mapping[object, float | None]) -> list[tuple[object, float, float]]:
    """(seed, value, baseline value) at the seeds where both have a number (not None or NaN)."""
    return [(seed, float(value), float(baseline[seed])) for seed, value in values.items()
            if value is not None and baseline.get(seed) is not None
            and not math.isnan(value) and not math.isnan(baseline[seed])]


def paired_difference(values: Mapping[object, float | None],
                      baseline: Mapping[object, float | None]) -> Interval:
    """The mean of ``values[s] - baseline[s]`` over the seeds ``s`` where both have a number,
    with its paired-t 95% interval; n is the number of pairs."""
    return t_interval(a - b for _seed, a, b in paired_values(values, baseline))


def paired_log_ratio(values: Mapping[object, float | None],
                     baseline: Mapping[object, float | None]) -> Interval:
    """The mean of ``ln(values[s] / baseline[s])`` over the seeds ``s`` where both have a
    positive number, with its paired-t 95% interval (``exp`` of its ends bounds the geometric
    mean ratio). For positive metrics whose seed effect multiplies every algorithm alike (rounds,
    time, bits to a target), where differences would carry the seed's scale. Raises ValueError
    on a value <= 0: it has no logarithm, and dropping it would hide a run."""
    pairs = paired_values(values, baseline)
    for seed, a, b in pairs:
        if a <= 0 or b <= 0:
            raise ValueError(f"seed {seed}: a log ratio needs positive values, got {a!r} and {b!r}")
    return t_interval(math.log(a / b) for _seed, a, b in pairs)


def format_interval(interval: Interval, fmt: Callable[[float], str], sign: bool = False,
                    show_n: bool = False) -> str:
    """``mean ± half`` as text (``fmt`` formats each number; ``sign`` puts + before a positive
    mean; the formats get absolute values). Never prints NaN or inf: no values is ``-``, one
    value ``mean (n=1, no interval)``; a spread of 0 (or of the mean's rounding, under 1e-9 of
    it) prints the mean alone. A half-width too small for ``fmt`` otherwise is printed in
    scientific notation, not as 0."""
    if interval.n == 0 or not math.isfinite(interval.mean):
        return "-"
    mean = fmt(abs(interval.mean))  # the formats of durations and bytes expect no sign
    if interval.mean < 0 and mean != fmt(0.0):
        mean = f"-{mean}"
    elif sign and interval.mean > 0:
        mean = f"+{mean}"
    if not math.isfinite(interval.half):
        return f"{mean} (n={interval.n}, no interval)"
    if interval.half <= 1e-9 * abs(interval.mean):  # every value the same (rounding aside)
        return mean + (f" (n={interval.n})" if show_n else "")
    half = fmt(interval.half)
    if half == fmt(0.0) and interval.half != 0:
        half = f"{interval.half:.1e}"
    return f"{mean} ± {half}" + (f" (n={interval.n})" if show_n else "")
