"""The run's own sections: when it stops (``stop``) and what it writes (``output``)."""

from __future__ import annotations

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from netfl.scenario.types import PositiveDuration, Probability, Section


class Stop(Section):
    """Stop at the algorithm's last round, at ``max_sim_time``, after ``max_local_steps`` local
    SGD steps summed over all clients (a compute budget, checked at the end of each round),
    once the learning cost of Group-FEL's eq. (5) reaches ``max_cost`` (seconds of client
    time, for the algorithms that charge it; checked at the end of each round), or (with
    ``at_target``) when test accuracy first reaches ``target_accuracy``, when the model
    stops being finite (``diverged``, unless ``tolerate_divergence``), or when nothing has
    progressed for ``stall_after`` (``stalled``), whichever comes first.

    The target is checked on every update of the model the algorithm would deploy (every
    round; with ``target_check_steps``, the first update at or after each multiple of that many
    local steps; with ``target_check_time`` of that much simulated time, with
    ``target_check_cost`` of that much eq. (5) cost), on the full test set. To keep that
    cheap, each update is first screened on fixed, class-stratified, nested subsets of 1/6,
    1/2 and all of ``target_screen_samples`` test samples (default: 60% of the test set), in
    turn; only one that comes within 4 standard errors of the target on each is evaluated on
    the full set (netfl.learn.screening). 0 evaluates every update on the full test set."""

    target_accuracy: Probability | None = None
    max_sim_time: PositiveDuration | None = None
    max_local_steps: PositiveInt | None = None
    max_cost: PositiveDuration | None = None
    at_target: bool = True
    target_screen_samples: NonNegativeInt | None = None
    target_check_steps: PositiveInt | None = Field(
        None, description="check the target only on the first update at or after each "
        "multiple of this many local steps (summed over clients): arms whose updates come at "
        "different step counts are then checked on one grid (default: every update)")
    target_check_time: PositiveDuration | None = Field(
        None, description="check the target only on the first update at or after each "
        "multiple of this much simulated time: arms whose rounds take different times are "
        "then checked on one grid of time (default: every update; not with "
        "target_check_steps)")
    target_check_cost: PositiveDuration | None = Field(
        None, description="check the target only on the first update at or after each "
        "multiple of this much eq. (5) learning cost (client-seconds; the algorithms that "
        "charge it): arms whose rounds cost different amounts are then checked on one grid "
        "of cost (default: every update)")
    stall_after: PositiveDuration | None = Field(
        86400.0, description="stop (stop_reason 'stalled') once the run has made no progress "
        "(no round ended, no model evaluated or mixed in) for this long in simulated time, so "
        "that a run whose rounds never end (every link down, an asynchronous loop waiting "
        "forever) cannot hang; null: no limit. Default 1 day")
    tolerate_divergence: bool = Field(
        False, description="go on when the model stops being finite (NaN or inf loss); by "
        "default such a run stops with stop_reason 'diverged' and exits with status 1")

    def check_grids(self) -> list[str]:
        """The target-check grids set (``target_check_steps``, ``_time``, ``_cost``): at most
        one; none when every update is checked."""
        return [name for name in ("target_check_steps", "target_check_time",
                                  "target_check_cost") if getattr(self, name) is not None]

    @model_validator(mode="after")
    def _one_check_grid(self) -> Stop:
        grids = self.check_grids()
        if len(grids) > 1:
            raise ValueError(f"{', '.join(grids)} set together: the target is checked on one "
                             "grid, of local steps, of simulated time or of learning cost")
        for grid, limit in (("target_check_steps", "max_local_steps"),
                            ("target_check_time", "max_sim_time"),
                            ("target_check_cost", "max_cost")):
            step, end = getattr(self, grid), getattr(self, limit)
            if step is not None and end is not None and step >= end:
                raise ValueError(f"{grid} ({step:g}) is not below {limit} ({end:g}): the run "
                                 "would end before the target is first checked")
        return self


class Output(Section):
    dir: str = "results"
    trace: bool = Field(False, description="write every trace record to events.parquet")
    timeline: bool = Field(False, description="write timeline.json (Chrome trace, simulated "
                           "time) and timeline.png (docs/models/timeline.md)")
    plots: bool = True
