"""Verdicts on a paper's findings, from per-seed results: pure functions.

A finding compares arms on one metric at every grid point of a study. At one point, arm A beats
arm B when A's mean is better, both means over the seeds both arms ran (an arm may run more).
The comparison is **significant** when the paired comparison over the seeds both arms share
(common random numbers: the same world and data at one seed) has a 95% interval that excludes no
change. The paired comparison is the log ratio ln(A/B) for costs (lower is better: rounds,
steps, time, bits to a target), whose seed effect multiplies every algorithm alike (a seed that
halves one arm's rounds halves the others'), and the difference A - B for accuracies (higher is
better), whose seed effect adds.

**Censored runs.** A run that never reached the target is *censored*: slower than any run that
did, its cost to the target at least what it had spent when it stopped (``Censored``; ``None``
where that is unknown). No mean can be formed over such an arm, so where either arm has a
censored run the comparison is by ranks over the shared seeds: at each seed the arm that reached
the target sooner wins (a censored run loses to a reached one; two censored runs tie), and A is
better where it wins more seeds than it loses. It is significant only where A reached the target
at every shared seed and the paired log ratio, with B's censored runs at what they had spent (a
lower bound on B's cost, so the test can only understate A's advantage), has a 95% interval below
no change. Its ratio is then a lower bound, shown as "B/A >= r".

* ``reproduced``: the claim holds, significantly, at every point (and a ``ratio`` claim by at
  least its factor);
* ``reproduced in direction only``: its direction holds at every point, but not significantly
  everywhere, or by less than the claimed factor;
* ``not reproduced``: the direction fails at some point (the reason names where and by how much);
* ``not run``: no results for some arm;
* ``not judged``: the runs are done but cannot test the claim (set by the caller,
  netfl.reproduction.render: say, accuracy arms that stopped at the target).

A ``comparable`` claim ("comparable or superior") tests that an arm is never worse than
another by more than a tolerance: reproduced where every paired interval clears it.

A point where neither arm reached the target at any seed says nothing about which reaches it
sooner: it is **untested**, left out of the verdict and named in its reason. A finding with no
tested point at all is not reproduced (the target was out of both arms' reach everywhere).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from netfl.results.intervals import (
    Interval,
    paired_difference,
    paired_log_ratio,
    paired_values,
    t_interval,
)

REPRODUCED = "reproduced"
DIRECTION = "reproduced in direction only"
NOT_REPRODUCED = "not reproduced"
NOT_RUN = "not run"
NOT_JUDGED = "not judged"  # run, but the runs cannot test it (they stopped at the target)
UNJUDGED = (NOT_RUN, NOT_JUDGED)  # verdicts with no comparison to explain



@dataclass(frozen=True)
class Censored:
    """A run that stopped before its target: its cost to the target is at least ``at_least``
    (what it had spent at the stop; None where unknown)."""

    at_least: float | None = None


Seeds = dict[int, "float | Censored | None"]  # None: censored, bound unknown


@dataclass(frozen=True)
class Comparison:
    """A against B at one point (``better``: A's mean is better; ``significant``: see module)."""

    point: str
    better: bool
    significant: bool
    ratio: float | None  # B's mean over A's (both reached somewhere); None otherwise
    text: str
    tested: bool = True  # False where neither arm reached the target: no evidence either way


@dataclass(frozen=True)
class Verdict:
    """A finding's verdict; ``reason`` is what was measured, ``why`` (possibly empty) the
    critical path or traffic behind it."""

    verdict: str
    reason: str
    comparisons: tuple[Comparison, ...] = ()
    why: str = ""

    @property
    def explained(self) -> str:
        """The measurement followed by its why, as the section tables show it."""
        return f"{self.reason}. Why: {self.why}" if self.why else self.reason


def _is_reached(value: float | Censored | None) -> bool:
    return value is not None and not isinstance(value, Censored)


def _reached(values: Seeds) -> list[float]:
    return [v for v in values.values() if _is_reached(v)]


def _only_reached(values: Seeds) -> dict[int, float]:
    return {seed: v for seed, v in values.items() if _is_reached(v)}


def _lower_bound(value: float | Censored | None) -> float | None:
    """A reached value, or a censored run's bound (None where there is none)."""
    if isinstance(value, Censored):
        return value.at_least
    return value


def paired_change(a: Seeds, b: Seeds, higher_is_better: bool) -> Interval:
    """A against B over the seeds where both reached the target: ln(A/B) for a cost whose paired
    values are all positive, else A - B (see module)."""
    if not higher_is_better and all(x > 0 and y > 0 for _s, x, y in paired_values(a, b)):
        return paired_log_ratio(a, b)
    return paired_difference(a, b)


def like_for_like(a: Seeds, b: Seeds) -> tuple[Seeds, Seeds, str]:
    """A and B at the seeds both ran, where they ran other seeds too (an arm with a third seed
    beside one with two): a mean over seeds the other arm lacks would compare other draws of the
    world and data. With no seed in common both stay whole. Returns them and a note for the
    verdict ("" where nothing was left out)."""
    shared = a.keys() & b.keys()
    if not shared or a.keys() == b.keys():
        return a, b, ""
    seeds = ", ".join(str(seed) for seed in sorted(shared))
    return ({s: a[s] for s in shared}, {s: b[s] for s in shared},
            f" [seeds both ran: {seeds}]")


def compare(point: str, a: Seeds, b: Seeds, name_a: str, name_b: str,
            higher_is_better: bool = False) -> Comparison:
    """A against B at one point, over the seeds both ran (a ``Censored`` value or None: target
    not reached); by means and a paired t interval where every run reached it, by ranks where
    one did not (see module)."""
    a, b, left_out = like_for_like(a, b)
    where = f"{point or 'all'}{left_out}"
    reached_a, reached_b = _reached(a), _reached(b)
    if not reached_a and not reached_b:
        return Comparison(point, False, False, None,
                          f"{where}: neither {name_a} nor {name_b} reached it", tested=False)
    if len(reached_a) < len(a) or len(reached_b) < len(b):
        return _compare_censored(point, a, b, name_a, name_b, higher_is_better, where)
    mean_a, mean_b = t_interval(reached_a).mean, t_interval(reached_b).mean
    sign = -1.0 if higher_is_better else 1.0
    better = sign * (mean_a - mean_b) < 0
    paired = paired_change(a, b, higher_is_better)
    significant = paired.excludes_zero and (sign * paired.mean < 0) == better
    ratio = (mean_b / mean_a) if mean_a else None
    if higher_is_better and ratio:
        ratio = 1.0 / ratio  # A's over B's: above 1, A is better, as for a cost
    if higher_is_better:
        how = _difference_text(name_a, name_b, paired, mean_a, mean_b)
    else:
        how = f"{name_b}/{name_a} = {ratio:.2f}x" if ratio is not None else ""
    return Comparison(point, better, significant, ratio,
                      f"{where}: {how}{_significance_note(significant, a, b)}")


def _significance_note(significant: bool, a: Seeds, b: Seeds) -> str:
    """What a comparison that is not significant says: with one seed in common there was no
    test to pass, and "not significant" would read as if there had been."""
    if significant:
        return ""
    if len(a.keys() & b.keys()) < 2:
        return " (one seed: no test)"
    return " (not significant at 95%)"


def seed_outcomes(a: Seeds, b: Seeds, higher_is_better: bool = False) -> tuple[int, int]:
    """(A's wins, A's losses) over the seeds both arms ran: a reached run beats a censored one,
    two reached runs compare by value, two censored runs tie."""
    wins = losses = 0
    for seed in a.keys() & b.keys():
        x, y = a[seed], b[seed]
        if _is_reached(x) and _is_reached(y):
            if x == y:
                continue
            a_better = (x > y) if higher_is_better else (x < y)
        elif _is_reached(x) or _is_reached(y):
            a_better = _is_reached(x)
        else:
            continue
        wins, losses = wins + a_better, losses + (not a_better)
    return wins, losses


def _compare_censored(point: str, a: Seeds, b: Seeds, name_a: str, name_b: str,
                      higher_is_better: bool, where: str) -> Comparison:
    """A against B where some run did not reach the target: by ranks (see module)."""
    wins, losses = seed_outcomes(a, b, higher_is_better)
    better = wins > losses
    shared = sorted(a.keys() & b.keys())
    a_everywhere = bool(shared) and all(_is_reached(a[s]) for s in shared)
    bounds = {s: _lower_bound(b[s]) for s in shared}
    ratio = None
    significant = False
    if better and a_everywhere and all(v is not None and v > 0 for v in bounds.values()) \
            and not higher_is_better:
        paired = paired_log_ratio({s: a[s] for s in shared}, bounds)
        significant = paired.excludes_zero and paired.mean < 0
        ratio = math.exp(-paired.mean)
    reached_a, reached_b = len(_reached(a)), len(_reached(b))
    counts = (f"{name_a} reached it in {reached_a} of {len(a)} runs, {name_b} in {reached_b} "
              f"of {len(b)}; {name_a} sooner at {wins} seed(s), later at {losses}")
    how = (f"{name_b}/{name_a} >= {ratio:.2f}x (geometric mean, {name_b}'s unreached runs at "
           f"what they had spent), " if ratio is not None else "")
    note = _significance_note(significant, a, b)
    shown_ratio = ratio if ratio is not None else (math.inf if not reached_b else None)
    return Comparison(point, better, significant, shown_ratio, f"{where}: {how}{counts}{note}")


def _difference_text(name_a: str, name_b: str, paired: Interval, mean_a: float,
                     mean_b: float) -> str:
    """A paired difference as a verdict shows it ("A - B = -0.0092 ± 0.0063"; no interval
    from one seed): an accuracy's change is compared, and so shown, as a difference. With no
    seed in common there is nothing to pair: the two means, said so."""
    if paired.n == 0:
        return f"{name_a} {mean_a:.4f} against {name_b} {mean_b:.4f} (no seed in common)"
    return _paired_text(name_a, name_b, paired, mean_format="+.4f", half_format=".2g")


def _paired_text(name_a: str, name_b: str, paired: Interval, mean_format: str,
                 half_format: str) -> str:
    """"A - B = d ± h" in the given formats (no "± h" where one seed gives no interval)."""
    half = "" if math.isnan(paired.half) else f" ± {paired.half:{half_format}}"
    return f"{name_a} - {name_b} = {paired.mean:{mean_format}}{half}"


def judge(comparisons: list[Comparison], at_least: float | None = None) -> Verdict:
    """The verdict over every point's comparison (and the claimed factor, where there is one)."""
    if not comparisons:
        return Verdict(NOT_RUN, "no results")
    untested = [c for c in comparisons if not c.tested]
    if untested:
        tested = [c for c in comparisons if c.tested]
        left_out = "untested, " + "; ".join(c.text for c in untested)
        if not tested:
            return Verdict(NOT_REPRODUCED, left_out, tuple(comparisons))
        verdict = judge(tested, at_least)
        return Verdict(verdict.verdict, f"{verdict.reason}; {left_out}", tuple(comparisons))
    failed = [c for c in comparisons if not c.better]
    if failed:
        return Verdict(NOT_REPRODUCED, "; ".join(c.text for c in failed), tuple(comparisons))
    weak = [c for c in comparisons if not c.significant]
    short = ([c for c in comparisons if c.ratio is not None and c.ratio < at_least]
             if at_least is not None else [])
    if weak or short:
        reasons = [c.text for c in weak]
        reasons += [f"{c.point or 'all'}: {c.ratio:.2f}x, not the claimed {at_least:g}x"
                    for c in short if c not in weak]
        return Verdict(DIRECTION, "; ".join(reasons), tuple(comparisons))
    return Verdict(REPRODUCED, "; ".join(c.text for c in comparisons), tuple(comparisons))


def less(values: dict[str, dict[str, Seeds]], arm: str, than: str,
         higher_is_better: bool = False, at_least: float | None = None) -> Verdict:
    """``arm`` better than ``than`` at every point both have."""
    if not values.get(arm) or not values.get(than):
        return Verdict(NOT_RUN, f"no results for {arm if not values.get(arm) else than}")
    points = [p for p in values[arm] if p in values[than]]
    return judge([compare(p, values[arm][p], values[than][p], arm, than, higher_is_better)
                  for p in points], at_least)


def _against_tolerance(point: str, a: Seeds, b: Seeds, name_a: str, name_b: str,
                       tolerance: float,
                       test: Callable[[Interval], tuple[bool, bool]]) -> Comparison:
    """A - B paired over the seeds at one point, judged by ``test`` (its interval -> whether
    the mean, and whether the whole 95% interval, meets the claim; an interval of one seed has
    NaN ends, which meet nothing)."""
    paired = paired_difference(_only_reached(a), _only_reached(b))
    if paired.n == 0:
        return Comparison(point, False, False, None, f"{point or 'all'}: no seed with both")
    holds, significant = test(paired)
    text = _paired_text(name_a, name_b, paired, mean_format="+.4g", half_format=".4g")
    return Comparison(point, holds, significant, None,
                      f"{point or 'all'}: {text} (tolerance {tolerance:g})")


def within(values: dict[str, dict[str, Seeds]], arm: str, than: str,
           tolerance: float) -> Verdict:
    """``arm`` within ``tolerance`` of ``than`` (absolute) at every point: reproduced where the
    paired differences' 95% interval lies inside ±tolerance, in direction only where only their
    mean does."""
    if not values.get(arm) or not values.get(than):
        return Verdict(NOT_RUN, f"no results for {arm if not values.get(arm) else than}")

    def inside(d: Interval) -> tuple[bool, bool]:
        return abs(d.mean) <= tolerance, d.low >= -tolerance and d.high <= tolerance

    return judge([_against_tolerance(p, values[arm][p], values[than][p], arm, than, tolerance,
                                     inside)
                  for p in values[arm] if p in values[than]])


def comparable(values: dict[str, dict[str, Seeds]], arm: str, tolerance: float,
               higher_is_better: bool = False) -> Verdict:
    """``arm`` comparable or superior to every other arm at every point: never worse than one
    by more than ``tolerance`` (absolute, paired over the seeds). Reproduced where every paired
    difference's 95% interval stays on the right side of -tolerance, in direction only where
    only its mean does."""
    others = [name for name in values if name != arm]
    if not values.get(arm) or not others:
        return Verdict(NOT_RUN, f"no results for {arm}" if not values.get(arm)
                       else "no other arm has results")
    sign = 1.0 if higher_is_better else -1.0  # sign * (arm - other) >= -tolerance: comparable

    def not_worse(d: Interval) -> tuple[bool, bool]:
        return sign * d.mean >= -tolerance, sign * d.mean - d.half >= -tolerance

    return judge([_against_tolerance(p, values[arm][p], values[other][p], arm, other,
                                     tolerance, not_worse)
                  for other in others for p in values[arm] if p in values[other]])


def across(values: dict[str, dict[str, Seeds]], arm: str, settings: list[tuple[str, str]],
           higher_is_better: bool = False) -> Verdict:
    """``arm`` better at a than at b for every pair (a, b) of ``settings`` (its points), paired
    over the seeds as arms are (a seed draws both settings' worlds)."""
    by_point = values.get(arm) or {}
    missing = sorted({p for pair in settings for p in pair} - set(by_point))
    if missing:
        return Verdict(NOT_RUN, f"no results for {arm} at {', '.join(missing)}")
    return judge([compare(f"{a} against {b}", by_point[a], by_point[b], a, b, higher_is_better)
                  for a, b in settings])


def lowest(values: dict[str, dict[str, Seeds]], arm: str,
           higher_is_better: bool = False) -> Verdict:
    """``arm`` better than every other arm at every point."""
    others = [name for name in values if name != arm]
    if not values.get(arm) or not others:
        return Verdict(NOT_RUN, f"no results for {arm}" if not values.get(arm)
                       else "no other arm has results")
    comparisons = []
    for other in others:
        for point in values[arm]:
            if point in values[other]:
                comparisons.append(compare(point, values[arm][point], values[other][point],
                                           arm, other, higher_is_better))
    return judge(comparisons)
