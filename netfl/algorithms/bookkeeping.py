"""A run's bookkeeping: evaluation rows, the target screen, stop budgets and divergence.

An algorithm never reads or writes these directly: it books rounds with ``end_round`` and
``evaluate``, charges costs with ``charge_cost`` and stops with ``stop`` (the primitives of
netfl.algorithms.base), and :class:`RunBook` decides when a metrics row is due, whether an
update reached the target (checked on every round, on a screening subset first, confirmed on
the full test set: time, bytes and steps to the target are exact to one update whatever
``eval_every`` says), when a budget is spent and when the model stopped being finite.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from netfl.learn.screening import passes_screen, screening_stages
from netfl.scenario.sections import Stop
from netfl.sim.trace import Cost, Evaluation, RoundEnd, TargetReached, TraceBus

# (params, test-sample indices or None) -> (accuracy, loss): the algorithm's own measure
Measure = Callable[..., tuple[float, float]]


def all_finite(params) -> bool:
    """Whether every number of a model (a torch tensor, a numpy array, or a list or dict of
    them, as an algorithm with several models deploys) is finite."""
    if isinstance(params, dict):
        return all(all_finite(p) for p in params.values())
    if isinstance(params, list | tuple):
        return all(all_finite(p) for p in params)
    if hasattr(params, "isfinite"):  # a torch tensor (torch is not imported for fake runs)
        return bool(params.isfinite().all())
    return bool(np.isfinite(np.asarray(params, dtype=float)).all())


class RunBook:
    """The counters and stop decisions of one algorithm's run.

    ``measure(params, subset=None)`` is the algorithm's ``test``; ``now()`` the simulated
    time; ``test_labels()`` the trainer's (None where evaluation is free: the fake trainer);
    ``screen_rng`` makes the screening subsets on first use.
    """

    def __init__(self, trace: TraceBus, stop: Stop, now: Callable[[], float],
                 measure: Measure, test_labels: Callable[[], np.ndarray | None],
                 screen_rng: Callable[[], np.random.Generator]):
        self.trace, self.stop_spec, self.now, self.measure = trace, stop, now, measure
        self.test_labels, self.screen_rng = test_labels, screen_rng
        self.reached_target = False
        self.rounds_done = 0
        self.rounds_without_updates = 0
        self.local_steps_done = 0
        self.closed_form_exchanges = 0  # exchanges advanced in closed form (links.closed_form)
        self.cost_spent = 0.0  # eq. (5) of Group-FEL, for the algorithms that charge it
        # "target_accuracy", "max_local_steps", "max_cost", "diverged", or an algorithm's own
        self.stopped_by: str | None = None
        self.diverged_round: int | None = None  # the first round whose model was not finite
        self.screen: list | None = None  # the screen's stages, made on first use
        self.deployed: tuple | None = None  # (round, model) last handed to end_round
        self.last_row_round: int | None = None
        self.checked_mark = 0  # the last multiple of the target-check grid checked
        self.last_progress_s = 0.0  # simulated time of the last round end, evaluation or mix

    def record_evaluation(self, round_: int, accuracy: float, loss: float,
                          check_target: bool = True) -> None:
        """Emit the Evaluation record, and TargetReached when it is the first to reach the
        target (stopping the run where ``stop.at_target`` says so). ``check_target`` False:
        a metrics row of an update off the target-check grid, which cannot reach it (else an
        arm evaluated more often than the grid would get more chances to cross it)."""
        self.trace.emit(Evaluation(time_s=self.now(), round=round_, accuracy=accuracy,
                                   loss=loss))
        self.last_row_round = round_
        self.note_progress()
        if not math.isfinite(loss):
            self.diverged(round_)
        target = self.stop_spec.target_accuracy
        if (check_target and target is not None and not self.reached_target
                and accuracy >= target):
            self.reached_target = True
            self.trace.emit(TargetReached(time_s=self.now(), round=round_, accuracy=accuracy,
                                          local_steps=self.local_steps_done))
            if self.stop_spec.at_target:
                self.stopped_by = "target_accuracy"

    def record_final(self) -> None:
        """A last metrics row for the model of the last completed round, where the run stopped
        outside ``end_round`` (at ``stop.max_sim_time``, or out of contacts) and that round has
        none yet: final_accuracy is then the accuracy of the model at the stop. Stamped at the
        stop time."""
        if self.deployed is not None and self.deployed[0] != self.last_row_round:
            # its update was checked (or, off a grid, not due) when its round ended
            self.record_evaluation(self.deployed[0], *self.measure(self.deployed[1]),
                                   check_target=not self.stop_spec.check_grids())

    def screen_for_target(self, params) -> tuple[float, float] | None:
        """Whether the update ``params`` may have reached the target: None when its accuracy
        on the screening subset is more than the margin below the target (or there is no
        target, or it was reached before); otherwise its (accuracy, loss) on the full test set,
        which decides (netfl.learn.screening)."""
        target = self.stop_spec.target_accuracy
        if target is None or self.reached_target:
            return None
        if self.screen is None:
            self.screen = self.screening_stages()
        if not passes_screen(self.screen, target,
                             lambda chosen: self.measure(params, chosen)[0]):
            return None
        return self.measure(params)

    def screening_stages(self) -> list:
        """The screen's stages (netfl.learn.screening.screening_stages); none where the trainer
        has no test labels (the fake trainer, whose evaluation is free) or the subsets would be
        the whole test set."""
        labels = self.test_labels()
        if labels is None:
            return []
        return screening_stages(labels, self.stop_spec.target_screen_samples,
                                self.stop_spec.target_accuracy, self.screen_rng())

    def charge_cost(self, node: str, kind: str, cost_s: float, round_: int) -> None:
        """Book ``cost_s`` seconds of learning cost of ``kind`` against ``node``."""
        self.cost_spent += cost_s
        self.trace.emit(Cost(time_s=self.now(), node=node, round=round_, kind=kind,
                             cost_s=cost_s))

    def budget_spent(self) -> str | None:
        """The stop budget this run has used up ("max_local_steps", "max_cost"), if any."""
        stop = self.stop_spec
        if stop.max_local_steps is not None and self.local_steps_done >= stop.max_local_steps:
            return "max_local_steps"
        if stop.max_cost is not None and self.cost_spent >= stop.max_cost:
            return "max_cost"
        return None

    def end_round(self, round_: int, params, eval_every: int, last_round: int) -> bool:
        """Book round ``round_`` as done with ``params`` the model to deploy; a metrics row
        when due (every ``eval_every`` rounds, at ``last_round``, when a budget is spent) or
        when the target is first reached. Returns True when the run should stop."""
        self.rounds_done = round_
        self.deployed = (round_, params)
        self.note_progress()
        self.trace.emit(RoundEnd(time_s=self.now(), round=round_))
        spent = self.budget_spent()
        due = round_ % eval_every == 0 or round_ == last_round or spent
        if self.diverged_round is None and not all_finite(params):
            self.diverged(round_)
            # a run that stops here ends with a row that shows it (loss NaN); a tolerant one
            # records rows as it would have
            due = due or self.stopped_by == "diverged"
        checked = self.target_check_due()
        measured = self.screen_for_target(params) if checked else None
        crossed = measured is not None and measured[0] >= self.stop_spec.target_accuracy
        if due or crossed:
            self.record_evaluation(round_, *(measured or self.measure(params)),
                                   check_target=checked)
        stop = self.stopped_by is not None
        if spent and not stop:
            self.stopped_by = spent
        return stop or spent is not None

    def note_progress(self) -> None:
        """The run progressed now (a round ended, a model was evaluated or mixed in): the
        stall watchdog (``stop.stall_after``) counts from here."""
        self.last_progress_s = self.now()

    def target_check_due(self) -> bool:
        """Whether this update is checked for the target: every update, or with
        ``stop.target_check_steps`` N the first at or after each multiple of N local steps
        (``stop.target_check_time`` T: of T simulated seconds; ``stop.target_check_cost`` C:
        of C client-seconds of eq. (5)'s learning cost)."""
        spec = self.stop_spec
        if spec.target_check_steps is not None:
            mark = self.local_steps_done // spec.target_check_steps
        elif spec.target_check_time is not None:
            mark = int(self.now() // spec.target_check_time)
        elif spec.target_check_cost is not None:
            mark = int(self.cost_spent // spec.target_check_cost)
        else:
            return True
        if mark <= self.checked_mark:
            return False
        self.checked_mark = mark
        return True

    def diverged(self, round_: int) -> None:
        """The model stopped being finite (a learning rate too high, an exploding update):
        every later number would be noise. Stop (``stop_reason: diverged``) unless the
        scenario tolerates it (``stop.tolerate_divergence``)."""
        if self.diverged_round is None:
            self.diverged_round = round_
        if not self.stop_spec.tolerate_divergence and self.stopped_by is None:
            self.stopped_by = "diverged"
