"""Time, bytes, rounds and steps to the target: exact to one update, whatever eval_every says."""

import numpy as np
import pandas as pd
import pytest

import netfl
from netfl.learn.screening import (
    passes_screen,
    screen_margin,
    screening_stages,
    stratified_subset,
)
from tests.algorithms.target_grid import grid_missing_the_crossing

FAMILIES = [
    {"kind": "hier-fedavg"},
    {"kind": "fedavg"},
    {"kind": "fed-chs", "interactions": 2},
    {"kind": "wrwgd"},
    {"kind": "chfl"},
    {"kind": "sfl"},
    {"kind": "hfl-pwp"},
    {"kind": "mll-sgd"},
    {"kind": "group-fel", "grouping": {"kind": "random", "group_size": 2}},
]


def run(tiny, algorithm: dict, eval_every: int, target: float = 0.5, **stop):
    if algorithm["kind"] == "fed-chs":
        tiny["world"]["topology"] = {"kind": "ring"}
    tiny["algorithm"] = {"rounds": 60, "local_steps": 1, "batch_size": 16, "lr": 0.05,
                         **algorithm, "eval_every": eval_every}
    tiny["model"]["learning_rate_gain"] = 0.02
    tiny["stop"] = {"target_accuracy": target, **stop}
    return netfl.run(tiny, write=False)


@pytest.mark.parametrize("algorithm", FAMILIES, ids=lambda a: a["kind"])
def test_the_target_is_found_at_the_update_that_crosses_it_not_at_the_next_evaluation(
        tiny, algorithm):
    every = run(tiny, algorithm, eval_every=1).summary
    coarse = run(tiny, algorithm, eval_every=50).summary
    assert every["rounds_to_target"] is not None and every["rounds_to_target"] < 50
    for key in ("rounds_to_target", "time_to_target_s", "bytes_to_target", "bits_to_target",
                "local_steps_to_target", "accuracy_at_target"):
        assert coarse[key] == every[key], key
    assert coarse["bits_to_target"] == 8 * coarse["bytes_to_target"]
    assert coarse["stop_reason"] == "target_accuracy"
    assert coarse["rounds"] == coarse["rounds_to_target"]


def test_metrics_rows_follow_eval_every_plus_the_crossing(tiny):
    result = run(tiny, {"kind": "hier-fedavg"}, eval_every=4, target=0.5, at_target=False)
    rounds = list(result.metrics["round"])
    crossing = result.summary["rounds_to_target"]
    assert crossing % 4 != 0  # else this test shows nothing
    assert rounds == sorted({0, crossing, 60, *range(4, 61, 4)})
    row = result.metrics[result.metrics["round"] == crossing].iloc[0]
    assert row["sim_time_s"] == result.summary["time_to_target_s"]
    assert row["bytes_total"] == result.summary["bytes_to_target"]


@pytest.mark.parametrize("algorithm", [{"kind": "fedavg"}, {"kind": "chfl"}, {"kind": "sfl"}],
                         ids=lambda a: a["kind"])
def test_a_step_grid_checks_the_first_update_at_or_after_each_multiple(tiny, algorithm):
    """stop.target_check_steps puts arms whose rounds differ in steps on one grid: the target
    is checked only on the first update at or after each multiple of N local steps."""
    every = run(tiny, algorithm, eval_every=50).summary
    per_round = every["local_steps"] / every["rounds"]
    crossing = every["rounds_to_target"]
    k = next(k for k in (4, 5, 7) if crossing % k)  # a grid the crossing is not on
    n = int(k * per_round)  # every k-th round
    gridded = run(tiny, algorithm, eval_every=50, target_check_steps=n).summary
    assert gridded["rounds_to_target"] > crossing and gridded["rounds_to_target"] % k == 0
    assert gridded["local_steps_to_target"] % n == 0
    # a grid of one round's steps checks every update: the same crossing
    one = run(tiny, algorithm, eval_every=50, target_check_steps=int(per_round)).summary
    assert one["rounds_to_target"] == crossing


@pytest.mark.parametrize("algorithm", [{"kind": "fedavg"}, {"kind": "hier-fedavg"}],
                         ids=lambda a: a["kind"])
def test_a_time_grid_checks_the_first_update_at_or_after_each_multiple(tiny, algorithm):
    """stop.target_check_time puts arms whose rounds take different times on one grid: the
    target is checked only on the first update at or after each multiple of T seconds."""
    # compute-bound rounds of unequal time, so a grid of time is not a grid of rounds
    tiny["devices"]["clients"] = {"flops": "50 MFLOPS", "jitter": 0.5}
    every = run(tiny, algorithm, eval_every=1, at_target=False)
    crossing = every.summary["rounds_to_target"]
    round_times = np.diff(every.metrics["sim_time_s"].to_numpy()[1:])
    assert round_times.max() > 1.2 * round_times.min()
    period, expected = grid_missing_the_crossing(
        every.metrics, "sim_time_s", 0.5, every.summary["time_to_target_s"] / crossing, crossing)
    gridded = run(tiny, algorithm, eval_every=50, target_check_time=period).summary
    assert gridded["rounds_to_target"] == expected.round
    assert gridded["time_to_target_s"] == expected.sim_time_s


def test_one_grid_of_steps_or_of_time_not_both(tiny):
    with pytest.raises(netfl.ScenarioError, match="target_check_time"):
        run(tiny, {"kind": "fedavg"}, eval_every=1, target_check_steps=10,
            target_check_time=5.0)
    with pytest.raises(netfl.ScenarioError, match="target_check_steps, target_check_time, "
                                                  "target_check_cost set together"):
        run(tiny, {"kind": "fedavg"}, eval_every=1, target_check_steps=10,
            target_check_time=5.0, target_check_cost=5.0)


def test_a_grid_coarser_than_the_run_is_refused(tiny):
    with pytest.raises(netfl.ScenarioError, match="target_check_time .* max_sim_time"):
        run(tiny, {"kind": "fedavg"}, eval_every=1, target_check_time=60.0,
            max_sim_time=60.0)
    with pytest.raises(netfl.ScenarioError, match="target_check_steps .* max_local_steps"):
        run(tiny, {"kind": "fedavg"}, eval_every=1, target_check_steps=100,
            max_local_steps=50)


@pytest.mark.parametrize("kind", ["fedavg", "hier-fedavg"])
def test_metrics_rows_off_the_grid_do_not_reach_the_target(tiny, kind):
    """A row due by eval_every evaluates an update the grid does not check: it cannot reach
    the target, whatever eval_every says (else an arm evaluated every round would get more
    chances than the grid gives it)."""
    period = None
    every = run(tiny, {"kind": kind}, eval_every=1, at_target=False)
    crossing = every.summary["rounds_to_target"]
    round_s = every.summary["time_to_target_s"] / crossing
    for factor in (3.7, 4.3, 5.3):
        coarse = run(tiny, {"kind": kind}, eval_every=50, target_check_time=factor * round_s)
        if coarse.summary["rounds_to_target"] > crossing:
            period = factor * round_s
            break
    assert period is not None  # a grid on which the crossing itself is not checked
    fine = run(tiny, {"kind": kind}, eval_every=1, target_check_time=period).summary
    assert fine["rounds_to_target"] == coarse.summary["rounds_to_target"]
    assert fine["time_to_target_s"] == coarse.summary["time_to_target_s"]


def test_the_counters_to_target_are_frozen_when_it_is_reached(tiny):
    result = run(tiny, {"kind": "fedavg"}, eval_every=7, at_target=False)
    s = result.summary
    assert s["rounds"] == 60 and s["rounds_to_target"] < 60
    assert s["bytes_to_target"] < s["bytes_total"]
    assert s["local_steps_to_target"] < s["local_steps"]
    assert s["time_to_target_s"] < s["sim_time_s"]


def test_screening_on_a_subset_finds_the_same_update_as_the_full_test_set(tiny):
    """Real training: the screened run and the run evaluating every update on the full test
    set stop at the same update with the same numbers."""
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["data"]["partition"] = {"kind": "dirichlet", "alpha": 0.5}
    tiny["algorithm"] = {"kind": "fedavg", "rounds": 40, "local_steps": 2, "batch_size": 16,
                         "lr": 0.1, "eval_every": 40}
    full = netfl.run(tiny, overrides=["stop.target_accuracy=0.6",
                                      "stop.target_screen_samples=0"], write=False).summary
    screened = netfl.run(tiny, overrides=["stop.target_accuracy=0.6",
                                          "stop.target_screen_samples=60"], write=False).summary
    assert full["rounds_to_target"] is not None and full["rounds_to_target"] < 40
    for key in ("rounds_to_target", "time_to_target_s", "bytes_to_target", "accuracy_at_target"):
        assert screened[key] == full[key], key


# ------------------------------------------------------------------------ pure functions


def test_a_stratified_subset_keeps_each_class_share():
    labels = np.repeat(np.arange(4), [500, 300, 150, 50])
    subset = stratified_subset(labels, 100, np.random.default_rng(0))
    assert len(subset) == 100 and len(set(subset)) == 100
    assert list(np.bincount(labels[subset])) == [50, 30, 15, 5]
    again = stratified_subset(labels, 100, np.random.default_rng(0))
    assert (subset == again).all()
    assert (stratified_subset(labels, 5000, np.random.default_rng(0)) == np.arange(1000)).all()


def test_stratified_subset_gives_leftover_places_to_the_largest_remainders():
    labels = np.repeat(np.arange(3), [10, 10, 10])
    counts = np.bincount(labels[stratified_subset(labels, 10, np.random.default_rng(1))],
                         minlength=3)
    assert counts.sum() == 10 and sorted(counts) == [3, 3, 4]


def test_screen_margin():
    assert screen_margin(0.8, 10000, 10000) == 0.0
    m = screen_margin(0.8, 2000, 10000)
    assert m == pytest.approx(4 * np.sqrt(0.16 / 2000 * 8000 / 9999))
    assert screen_margin(0.8, 1000, 10000) > m


def test_screening_stages_are_nested_stratified_subsets_with_their_margins():
    labels = np.repeat(np.arange(10), 1000)
    stages = screening_stages(labels, 6000, 0.8, np.random.default_rng(3))
    assert [size for _, size, _ in stages] == [1000, 3000, 6000]
    seen = np.array([], dtype=np.int64)
    for increment, size, margin in stages:
        assert len(np.intersect1d(increment, seen)) == 0  # only new samples each stage
        seen = np.concatenate([seen, increment])
        assert len(seen) == size and list(np.bincount(labels[seen])) == [size // 10] * 10
        assert margin == screen_margin(0.8, size, 10000)
    assert sorted(seen) == list(stratified_subset(labels, 6000, np.random.default_rng(3)))
    again = screening_stages(labels, 6000, 0.8, np.random.default_rng(3))
    assert all((a[0] == b[0]).all() for a, b in zip(stages, again, strict=True))


def test_screening_stages_default_size_small_stages_and_no_screen():
    labels = np.repeat(np.arange(10), 1000)
    rng = np.random.default_rng(0)
    assert [n for _, n, _ in screening_stages(labels, None, 0.8, rng)] == [1000, 3000, 6000]
    assert [n for _, n, _ in screening_stages(labels, 600, 0.8, rng)] == [300, 600]  # 100: out
    assert [n for _, n, _ in screening_stages(labels, 60, 0.8, rng)] == [60]
    assert screening_stages(labels, 0, 0.8, rng) == []
    assert screening_stages(labels, 10000, 0.8, rng) == []


def test_a_model_just_below_the_target_is_screened_out_before_the_full_test_set():
    """A model 2 points under the target (on every subset) is within one 2,000-sample subset's
    margin (2.5 points: the screen before the stages sent it to the full test set on every
    update); the stages screen it out at their largest, 6,000 samples, with no full
    evaluation. A model 1 point under passes them all."""
    labels = np.repeat(np.arange(10), 1000)
    rng = np.random.default_rng(5)
    single = [(stratified_subset(labels, 2000, rng), 2000, screen_margin(0.8, 2000, 10000))]
    assert passes_screen(single, 0.8, lambda chosen: 0.78)
    evaluated = []

    def accuracy_on(chosen):
        evaluated.append(len(chosen))
        return 0.78

    stages = screening_stages(labels, None, 0.8, rng)
    assert not passes_screen(stages, 0.8, accuracy_on)
    assert evaluated == [1000, 2000, 3000]  # every stage, each only its new samples
    assert passes_screen(stages, 0.8, lambda chosen: 0.79)
    evaluated.clear()
    assert not passes_screen(stages, 0.8, lambda chosen: accuracy_on(chosen) - 0.1)
    assert evaluated == [1000]  # far below: the first stage decides
    assert passes_screen([], 0.8, accuracy_on)


def test_metrics_columns_unchanged(tiny):
    result = run(tiny, {"kind": "fedavg"}, eval_every=10)
    assert isinstance(result.metrics, pd.DataFrame)
    assert list(result.metrics.columns)[:4] == ["sim_time_s", "round", "accuracy", "loss"]


@pytest.mark.parametrize("algorithm", [{"kind": "fed-chs", "interactions": 2}, {"kind": "wrwgd"},
                                       {"kind": "chfl"}, {"kind": "sfl"}],
                         ids=lambda a: a["kind"])
def test_the_crossing_model_is_checked_before_it_moves_on(tiny, algorithm):
    """Time and bytes to target stop at the update that crossed it: the hand-over that
    follows (to the next ES, client or edge) is not part of them."""
    tiny["output"] = {"plots": False, "trace": True}
    result = run(tiny, algorithm, eval_every=50)
    events = result.events.reset_index(drop=True)
    reached = events.index[events["kind"] == "target_reached"][0]
    work = events.index[events["kind"].isin(["train_end", "aggregate"]) & (events.index < reached)]
    moves = events.index[events["kind"] == "hand_over"]
    assert not ((moves > work.max()) & (moves < reached)).any()  # no move after the last update
    assert (moves < reached).any()  # models did move before the crossing


@pytest.mark.parametrize("kind", ["fedavg", "group-fel"])
def test_a_run_stopped_by_max_sim_time_ends_with_a_row_for_its_last_model(tiny, kind):
    algorithm = {"kind": kind}
    if kind == "group-fel":
        algorithm["grouping"] = {"kind": "random", "group_size": 2}
    full = run(tiny, algorithm, eval_every=50, target=0.99, at_target=False)
    cut = full.metrics["sim_time_s"].iloc[-1] * 0.6
    result = run(tiny, algorithm, eval_every=50, target=0.99, at_target=False,
                 max_sim_time=float(cut))
    s, rows = result.summary, result.metrics
    assert s["stop_reason"] == "max_sim_time" and 0 < s["rounds"] < 50
    assert rows["round"].iloc[-1] == s["rounds"]
    assert rows["sim_time_s"].iloc[-1] == s["sim_time_s"]
    assert s["final_accuracy"] == rows["accuracy"].iloc[-1]
    assert list(rows["round"]).count(s["rounds"]) == 1
