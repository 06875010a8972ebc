"""The section of ground-assisted FL with satellites as clients (netfl/algorithms/fedsat.py):
Razmi, Matthiesen, Dekorsy and Popovski, "Ground-Assisted Federated Learning in LEO Satellite
Constellations", IEEE Wireless Communications Letters 11(4), 2022 (arXiv:2109.01348): FedSat
and the paper's adaptations of FedAvg and FedAsync to ground stations, with the scheduling of
"Scheduling for Ground-Assisted Federated Learning in LEO Satellite Constellations" (the same
authors, EUSIPCO 2022, arXiv:2206.01952)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.kinds import builtin_algorithm
from netfl.scenario.types import Section


class TimeHinge(Section):
    """FedAsync's staleness on the ground (the WCL paper's eq. (6)), on the time between the
    version an update started from and the version it meets: s(t) = 1 while
    t <= (1 + ``epsilon``) T_o,max (T_o,max the constellation's longest orbital period: no
    update can be fresher than one orbit), then 1 / (1 + ``a`` (t - (1 + epsilon) T_o,max)).

    ``a`` is per second. The paper gives "a = 5(1 + epsilon) T_o,max", a time where eq. (6)
    needs a rate; netfl reads it as 1 / (5 (1 + epsilon) T_o,max) (null, the default: the
    weight halves five orbits past the hinge); the literal value, a = 5 (1 + epsilon) T_o,max
    per second, makes the hinge a cut-off and is run as its own arm (docs/models/fedsat.md)."""

    epsilon: NonNegativeFloat = 0.01
    a: PositiveFloat | None = None


@builtin_algorithm
class FedSatSpec(AlgorithmSpec):
    """Ground-assisted FL: satellites train between ground-station contacts and exchange
    models only in them (the WCL paper's protocol, Sec. III-A; needs ``world.clients:
    satellites``). Every station is one parameter server (the cloud behind them): the paper
    has one station and leaves several to future work.

    operation: ``asynchronous`` (Algorithm 3: each update taken as its satellite connects) or
        ``synchronous`` (Algorithm 2, the paper's FedAvg: an epoch sends the model to every
        scheduled satellite at a contact and waits for each to return its update at a later
        one; eq. (3)'s average).
    server_update: Algorithm 3's SERVERUPDATE: ``unrolled`` (FedSat, eq. (7): the global model
        less n_k / n times the satellite's previous update less its new one) or ``fedasync``
        (eq. (4): x <- (1 - alpha) x + alpha x_k, alpha = ``alpha`` x s(t), s of ``staleness``).
    schedule: Algorithm 3's SCHEDULE: ``every-contact`` (a satellite gets the model at each
        contact, as the WCL paper's runs) or ``next-pass`` (FedSatSchedule, EUSIPCO 2022: at a
        contact, when the satellite's next pass is long enough to train in, it gets the model
        at that pass's start, trains and uploads within it; otherwise now).
    exchanges_per_pass: ``one`` (the default): a satellite that took a model in a pass trains
        it and returns it at its next pass, even where its training ends within this one
        ("the algorithm ... determine[s] whether the satellite trains the next model iteration
        while being offline or during its next visit", EUSIPCO 2022, Sec. III; the WCL paper
        leaves "multiple data exchanges during a single GS pass" to future work), except the
        model ``next-pass`` holds for a pass, returned within it; ``many``: it connects again
        as soon as its training ends in a pass (the WCL protocol's "directly upon completion
        of a communication task", read as a computation task).
    rounds: global epochs (model versions) T.
    clients_per_round: satellites an epoch schedules (synchronous; all when null).
    prox: lambda of eq. (5): local steps on f(x) + lambda/2 ||x - x_0||^2 (0 in the papers'
        runs).
    """

    kind: Literal["fedsat"]
    IMPLEMENTATION = "netfl.algorithms.fedsat:FedSat"
    WORLDS = ("leo",)
    SATELLITE_CLIENTS = True
    USES_CLOUD = True
    ASYNCHRONOUS = True
    operation: Literal["asynchronous", "synchronous"] = "asynchronous"
    server_update: Literal["unrolled", "fedasync"] = "unrolled"
    alpha: float = Field(0.5, gt=0, le=1, description="FedAsync's base mixing weight alpha'")
    staleness: TimeHinge | None = TimeHinge()
    schedule: Literal["every-contact", "next-pass"] = "every-contact"
    exchanges_per_pass: Literal["one", "many"] = "one"
    clients_per_round: PositiveInt | None = None
    prox: NonNegativeFloat = 0.0
    rounds: PositiveInt = 1000

    @model_validator(mode="after")
    def _one_operation(self) -> FedSatSpec:
        """Settings of the other operation or update rule, set away from their defaults, are
        errors (a file may spell the defaults out and still switch with --set)."""
        changed = {name for name in self.model_fields_set
                   if getattr(self, name) != type(self).model_fields[name].default}
        if self.operation == "synchronous":
            for name in ("server_update", "schedule", "alpha", "staleness"):
                if name in changed:
                    raise ValueError(f"{name} is Algorithm 3's (operation: asynchronous); the "
                                     f"synchronous operation averages each epoch (eq. (3))")
        elif "clients_per_round" in changed:
            raise ValueError("clients_per_round is the synchronous operation's (an epoch's "
                             "schedule); the asynchronous one takes every satellite")
        if self.server_update == "unrolled" and changed & {"alpha", "staleness"}:
            raise ValueError("alpha and staleness are FedAsync's (server_update: fedasync)")
        return self

    def check_scenario(self, scenario) -> None:
        super().check_scenario(scenario)
        world = scenario.world
        if getattr(world, "clients", None) != "satellites":
            raise ValueError("fedsat's clients are satellites: set world.clients: satellites "
                             "(ground stations as edge servers)")
