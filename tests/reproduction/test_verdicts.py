"""Verdicts on findings: pure functions of per-seed results (None: target not reached)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.reproduction.verdicts import (
    DIRECTION,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Censored,
    across,
    comparable,
    compare,
    less,
    lowest,
    seed_outcomes,
    within,
)
from netfl.results.intervals import paired_difference


def test_a_consistent_win_over_seeds_is_reproduced():
    values = {"A": {"": {1: 10.0, 2: 11.0, 3: 12.0}}, "B": {"": {1: 20.0, 2: 22.0, 3: 21.0}}}
    verdict = less(values, "A", "B")
    assert verdict.verdict == REPRODUCED and "B/A = 1.91x" in verdict.reason


def test_a_win_in_the_mean_that_the_paired_interval_does_not_support_is_direction_only():
    # paired differences -5, +3, -4: mean -2, interval includes 0
    values = {"A": {"": {1: 10.0, 2: 25.0, 3: 10.0}}, "B": {"": {1: 15.0, 2: 22.0, 3: 14.0}}}
    verdict = less(values, "A", "B")
    assert verdict.verdict == DIRECTION and "not significant" in verdict.reason


def test_a_loss_at_one_point_is_not_reproduced_and_names_it():
    values = {"A": {"p1": {1: 1.0, 2: 1.1}, "p2": {1: 9.0, 2: 9.5}},
              "B": {"p1": {1: 2.0, 2: 2.1}, "p2": {1: 5.0, 2: 5.2}}}
    verdict = less(values, "A", "B")
    assert verdict.verdict == NOT_REPRODUCED
    assert verdict.reason.startswith("p2:") and "p1" not in verdict.reason


def test_a_cost_is_compared_by_its_log_ratio_so_a_seed_that_scales_every_arm_does_not_hide_it():
    # A needs half of B's rounds at every seed, and the seeds scale both 10-fold: differences
    # -30, -60, -6 spread too wide for an interval at n = 3; the log ratios are ln(1/2) each
    a, b = {1: 30.0, 2: 60.0, 3: 6.0}, {1: 60.0, 2: 120.0, 3: 12.0}
    assert not paired_difference(a, b).excludes_zero
    assert compare("", a, b, "A", "B").significant
    mixed = compare("", {1: 10.0, 2: 35.0, 3: 15.0}, {1: 60.0, 2: 40.0, 3: 30.0}, "A", "B")
    assert mixed.better and not mixed.significant


def test_an_accuracy_is_compared_by_its_difference():
    # accuracies: the same log-scale spread would be significant; differences +0.01, -0.02, +0.05
    # are not
    a, b = {1: 0.81, 2: 0.78, 3: 0.85}, {1: 0.80, 2: 0.80, 3: 0.80}
    c = compare("", a, b, "A", "B", higher_is_better=True)
    assert c.better and not c.significant


def test_not_reaching_the_target_is_worse_than_reaching_it():
    reached, never = {1: 500.0, 2: 600.0}, {1: Censored(5000.0), 2: Censored(6000.0)}
    assert compare("", reached, never, "A", "B").better
    win = compare("", reached, never, "A", "B")
    assert win.significant and "B/A >= 10.00x" in win.text
    # where what B had spent is unknown, nothing bounds its cost: a win, but not a measured one
    unknown = compare("", reached, {1: None, 2: None}, "A", "B")
    assert unknown.better and not unknown.significant
    # nor where B stopped before spending as much as A needed (it may reach it just after)
    early = compare("", reached, {1: Censored(400.0), 2: Censored(700.0)}, "A", "B")
    assert early.better and not early.significant
    assert not compare("", never, reached, "A", "B").better
    # reaching it in fewer runs than the other is not a win, however fast those runs were
    assert not compare("", {1: 1.0, 2: None}, {1: 50.0, 2: 60.0}, "A", "B").better
    both_never = compare("", never, never, "A", "B")
    assert not both_never.better and "neither" in both_never.text


def test_a_censored_seed_stays_in_the_comparison():
    """The page's rule: a run that never reaches the target is slower than any that does, in the
    comparison as in the summary. The code once dropped such a seed from its arm's mean and from
    the pairing, so A's two fast runs made it significantly better although its third never got
    there."""
    a = {1: 10.0, 2: 10.0, 3: Censored(40.0)}
    b = {1: 20.0, 2: 21.0, 3: Censored(40.0)}
    c = compare("", a, b, "A", "B")
    assert c.better and not c.significant  # before: significant, from seeds 1 and 2 alone
    plain = compare("", {1: 10.0, 2: 10.0, 3: None}, {1: 20.0, 2: 21.0, 3: None}, "A", "B")
    assert plain.better and not plain.significant
    assert less({"A": {"": a}, "B": {"": b}}, "A", "B").verdict == DIRECTION
    # A lost seed 3 to a B that reached it: two wins to one loss, by rank, not by A's mean
    lost = compare("", {1: 10.0, 2: 10.0, 3: Censored(40.0)}, {1: 20.0, 2: 20.0, 3: 30.0},
                   "A", "B")
    assert lost.better and not lost.significant and "later at 1" in lost.text
    assert seed_outcomes({1: 10.0, 2: 10.0, 3: None}, {1: 20.0, 2: 20.0, 3: 30.0}) == (2, 1)


@given(st.lists(st.tuples(st.one_of(st.none(), st.floats(1, 1e6)),
                          st.one_of(st.none(), st.floats(1, 1e6))), min_size=1, max_size=6))
@settings(max_examples=200, deadline=None)
def test_ranks_are_antisymmetric(pairs):
    """A's wins over B are B's losses to A, whatever is censored."""
    a = {i: (Censored(x) if x is None else x) for i, (x, _y) in enumerate(pairs)}
    b = {i: y for i, (_x, y) in enumerate(pairs)}
    wins, losses = seed_outcomes(a, b)
    assert seed_outcomes(b, a) == (losses, wins)
    ab, ba = compare("", a, b, "A", "B"), compare("", b, a, "B", "A")
    assert not (ab.better and ba.better)
    assert not (ab.significant and ab.better and ba.better)


def test_higher_is_better_flips_the_comparison():
    values = {"A": {"": {1: 0.90, 2: 0.91}}, "B": {"": {1: 0.80, 2: 0.82}}}
    assert less(values, "A", "B", higher_is_better=True).verdict == REPRODUCED
    assert less(values, "A", "B").verdict == NOT_REPRODUCED


def test_an_accuracy_verdict_shows_the_paired_difference_with_its_arms_in_order():
    # it once read "B/A = 1.12x" for A's mean over B's: the label named the arms the wrong way
    values = {"A": {"": {1: 0.90, 2: 0.91, 3: 0.92}}, "B": {"": {1: 0.80, 2: 0.82, 3: 0.83}}}
    verdict = less(values, "A", "B", higher_is_better=True)
    assert "A - B = +0.0933 ± 0.014" in verdict.reason and "B/A" not in verdict.reason
    one_seed = less({"A": {"": {1: 0.85}}, "B": {"": {1: 0.86}}}, "A", "B", higher_is_better=True)
    assert "A - B = -0.0100 (one seed: no test)" in one_seed.reason
    apart = less({"A": {"": {1: 0.85}}, "B": {"": {2: 0.86}}}, "A", "B", higher_is_better=True)
    assert "A 0.8500 against B 0.8600 (no seed in common)" in apart.reason
    assert "nan" not in apart.reason


def test_one_seed_in_common_says_no_test_was_made_rather_than_not_significant():
    # a one-seed study (HFL-PWP's Table 7) read "(not significant at 95%)", as if a test had run
    one = less({"A": {"10%": {1: 50.0}}, "B": {"10%": {1: 60.0}}}, "A", "B")
    assert one.verdict == DIRECTION and "(one seed: no test)" in one.reason
    assert "not significant" not in one.reason
    censored = less({"A": {"": {1: 50.0}}, "B": {"": {1: Censored(80.0)}}}, "A", "B")
    assert "(one seed: no test)" in censored.reason
    two = less({"A": {"": {1: 50.0, 2: 70.0}}, "B": {"": {1: 60.0, 2: 65.0}}}, "A", "B")
    assert "(not significant at 95%)" in two.reason


def test_a_ratio_claim_short_of_its_factor_is_direction_only():
    values = {"A": {"": {1: 23.0, 2: 24.0, 3: 22.0}}, "B": {"": {1: 70.0, 2: 72.0, 3: 69.0}}}
    assert less(values, "A", "B", at_least=7.7).verdict == DIRECTION
    assert "not the claimed 7.7x" in less(values, "A", "B", at_least=7.7).reason
    assert less(values, "A", "B", at_least=3.0).verdict == REPRODUCED


def test_lowest_compares_against_every_other_arm():
    values = {"A": {"": {1: 1.0, 2: 1.2, 3: 1.1}}, "B": {"": {1: 2.0, 2: 2.2, 3: 2.1}},
              "C": {"": {1: 0.5, 2: 0.6, 3: 0.55}}}
    verdict = lowest(values, "A")
    assert verdict.verdict == NOT_REPRODUCED and "C/A" in verdict.reason
    assert lowest(values, "C").verdict == REPRODUCED


def test_within_a_tolerance():
    a = {"": {1: 0.981, 2: 0.980, 3: 0.982}}
    close = {"A": a, "B": {"": {1: 0.983, 2: 0.982, 3: 0.983}}}
    far = {"A": a, "B": {"": {1: 0.95, 2: 0.96, 3: 0.955}}}
    assert within(close, "A", "B", 0.01).verdict == REPRODUCED
    assert within(far, "A", "B", 0.01).verdict == NOT_REPRODUCED


def test_missing_arms_are_not_run():
    assert less({"A": {"": {1: 1.0}}}, "A", "B").verdict == NOT_RUN
    assert lowest({"A": {"": {1: 1.0}}}, "A").verdict == NOT_RUN
    assert lowest({}, "A").verdict == NOT_RUN


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1.0, 1e6), min_size=2, max_size=6),
       st.lists(st.floats(1.0, 1e6), min_size=2, max_size=6))
def test_a_and_b_never_both_beat_each_other(xs, ys):
    n = min(len(xs), len(ys))
    a = {"": {i: x for i, x in enumerate(xs[:n])}}
    b = {"": {i: y for i, y in enumerate(ys[:n])}}
    one, other = less({"A": a, "B": b}, "A", "B"), less({"A": a, "B": b}, "B", "A")
    assert not (one.verdict == REPRODUCED and other.verdict == REPRODUCED)
    assert not (one.verdict != NOT_REPRODUCED and other.verdict != NOT_REPRODUCED
                and xs[:n] != ys[:n])


def test_crossovers_are_where_the_difference_changes_sign():
    from netfl.reproduction.render import crossovers

    a = {1.0: 10.0, 10.0: 5.0, 100.0: 1.0}
    b = {1.0: 6.0, 10.0: 6.0, 100.0: 6.0}
    [x] = crossovers(a, b, log_x=False)
    assert x == pytest.approx(1 + (4 / 5) * 9)  # a - b: +4 at 1, -1 at 10
    [x] = crossovers(a, b, log_x=True)
    assert x == pytest.approx(10 ** 0.8)
    assert crossovers(a, {1.0: 20.0, 100.0: 20.0}) == []
    # on log-log axes: 5300 against 4100 at 2e6, 57 against 66 at 2e8
    [x] = crossovers({2e6: 5300.0, 2e8: 57.0}, {2e6: 4100.0, 2e8: 66.0}, log_y=True)
    share = math.log(5300 / 4100) / (math.log(5300 / 4100) - math.log(57 / 66))
    assert x == pytest.approx(2e6 * 100 ** share) and 3e7 < x < 5e7
    assert crossovers({1.0: 3.0}, {2.0: 1.0}) == []


def test_a_point_neither_arm_reached_is_left_out_of_the_verdict_and_named():
    # before: "neither reached it" counted as a failed direction, so a target out of every
    # arm's reach at one grid point made a clear win elsewhere "not reproduced"
    never = {1: None, 2: None, 3: None}
    values = {"A": {"easy": {1: 10.0, 2: 11.0, 3: 12.0}, "hard": never},
              "B": {"easy": {1: 30.0, 2: 33.0, 3: 36.0}, "hard": never}}
    verdict = less(values, "A", "B")
    assert verdict.verdict == REPRODUCED
    assert "untested, hard: neither A nor B reached it" in verdict.reason
    # the rest of the verdict is judged as before: a failed direction still fails
    values["B"]["easy"] = {1: 5.0, 2: 6.0, 3: 7.0}
    assert less(values, "A", "B").verdict == NOT_REPRODUCED


def test_a_finding_untested_everywhere_is_not_reproduced():
    never = {1: None, 2: None}
    verdict = less({"A": {"": never}, "B": {"": never}}, "A", "B")
    assert verdict.verdict == NOT_REPRODUCED and "neither A nor B" in verdict.reason


def test_comparable_or_superior_allows_a_small_loss_but_not_a_large_one():
    acc = {"A": {"x": {1: 0.880, 2: 0.885, 3: 0.882}, "y": {1: 0.90, 2: 0.91, 3: 0.905}},
           "B": {"x": {1: 0.884, 2: 0.888, 3: 0.886}, "y": {1: 0.85, 2: 0.86, 3: 0.855}}}
    # A is 0.4 points below B at x (inside a 1-point tolerance, and so is its interval) and
    # 5 points above at y: comparable or superior everywhere
    verdict = comparable(acc, "A", 0.01, higher_is_better=True)
    assert verdict.verdict == REPRODUCED and "x: A - B = -0.003667" in verdict.reason
    # strictly best, it is not: the same data fail 'lowest'
    assert lowest(acc, "A", higher_is_better=True).verdict == NOT_REPRODUCED
    acc["B"]["x"] = {1: 0.90, 2: 0.90, 3: 0.90}  # now 1.8 points below: not comparable
    failed = comparable(acc, "A", 0.01, higher_is_better=True)
    assert failed.verdict == NOT_REPRODUCED and "x: A - B = -0.01767" in failed.reason


def test_comparable_within_tolerance_on_the_mean_only_is_direction_only():
    acc = {"A": {"": {1: 0.880, 2: 0.900}}, "B": {"": {1: 0.895, 2: 0.890}}}
    # mean difference -0.25 points, but two seeds that disagree: the interval reaches far below
    verdict = comparable(acc, "A", 0.01, higher_is_better=True)
    assert verdict.verdict == DIRECTION
    one = {"A": {"": {1: 0.88}}, "B": {"": {1: 0.885}}}  # one seed: no interval
    assert comparable(one, "A", 0.01, higher_is_better=True).verdict == DIRECTION


def test_comparable_on_a_cost_is_never_above_it_by_more_than_the_tolerance():
    steps = {"A": {"": {1: 105.0, 2: 104.0, 3: 106.0}}, "B": {"": {1: 100.0, 2: 100.0, 3: 101.0}}}
    assert comparable(steps, "A", 10.0).verdict == REPRODUCED
    assert comparable(steps, "A", 2.0).verdict == NOT_REPRODUCED
    assert comparable({"A": steps["A"]}, "A", 1.0).verdict == NOT_RUN


def test_across_settings_compares_one_arm_with_itself_pair_by_pair():
    steps = {"A": {"p_c=1": {1: 100.0, 2: 120.0, 3: 110.0}, "p_g=1": {1: 150.0, 2: 170.0, 3: 160.0},
                   "p_c=2": {1: 80.0, 2: 90.0}, "p_g=2": {1: 70.0, 2: 95.0}}}
    both = across(steps, "A", [("p_c=1", "p_g=1"), ("p_c=2", "p_g=2")])
    assert both.verdict == NOT_REPRODUCED and "p_c=2 against p_g=2" in both.reason
    one = across(steps, "A", [("p_c=1", "p_g=1")])
    assert one.verdict == REPRODUCED and "p_g=1/p_c=1 = 1.45x" in one.reason
    assert across(steps, "A", [("p_c=1", "p_g=5")]).verdict == NOT_RUN


def test_arms_with_other_seeds_are_compared_on_the_seeds_both_ran():
    # HFL-PWP's Table 4 runs a third seed of its headline pair only: against an arm of two
    # seeds, the third seed's draw (here an easy one) must not enter the means
    a = {1: 30.0, 2: 40.0, 3: 10.0}
    b = {1: 60.0, 2: 80.0}
    verdict = less({"A": {"": a}, "B": {"": b}}, "A", "B")
    assert verdict.comparisons[0].ratio == pytest.approx(2.0)  # 140 / 70, not 140 / 80 * 3
    assert "[seeds both ran: 1, 2]" in verdict.reason
    censored = less({"A": {"": a}, "B": {"": {1: 60.0, 2: Censored(90.0)}}}, "A", "B")
    assert "reached it in 2 of 2 runs" in censored.reason and "seeds both ran" in censored.reason
    same = less({"A": {"": {1: 30.0, 2: 40.0}}, "B": {"": b}}, "A", "B")
    assert "seeds both ran" not in same.reason
