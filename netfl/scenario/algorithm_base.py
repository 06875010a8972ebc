"""What every algorithm section shares: the common fields (:class:`AlgorithmSpec`), upload
compression and learning-rate schedules.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
)

from netfl.scenario.types import PositiveDuration, Section


class NoCompressionSpec(Section):
    kind: Literal["none"] = "none"


class QsgdSpec(Section):
    """QSGD ("QSGD: Communication-Efficient SGD via Gradient Quantization and Encoding", NeurIPS
    2017) with ``levels`` s, over buckets of ``bucket_size``
    coordinates (the whole vector when null); see docs/models/fed-chs.md for the bit count."""

    kind: Literal["qsgd"]
    levels: PositiveInt = 16
    bucket_size: PositiveInt | None = 512


class Int8Spec(Section):
    """Models sent as int8 with a float32 scale per bucket of ``bucket_size`` (HFL-PWP's
    Hier-Local-QSGD: "converting the weights from fp32 into int8")."""

    kind: Literal["int8"]
    bucket_size: PositiveInt | None = 512


Compression = Annotated[NoCompressionSpec | QsgdSpec | Int8Spec, Field(discriminator="kind")]


class AlgorithmSpec(Section):
    """Shared by every algorithm.

    rounds: global rounds (cloud aggregations, or the algorithm's own notion of a round).
    local_steps: SGD steps a client takes per local training (E).
    lr: client learning rate (constant).
    momentum, weight_decay: of the clients' SGD (momentum buffers start at zero each local
        training).
    batch_size: mini-batch size per local step.
    eval_every: evaluate the global model every this many rounds (and after the last).
    idle_wait: when a server's round gets no update at all (every client unreachable or
        dropped), it waits this long before going on, so rounds are not burnt in no time.
    compression: of what is sent upwards (client -> server, edge -> cloud); downloads stay
        float32.
    """

    # What an algorithm declares about itself, netfl's own as an extension's: the world kinds
    # it runs on, whether it aggregates at the cloud (a world must then have one), and whether
    # it books Group-FEL's eq. (5) cost (stop.max_cost needs it). netfl's own also name their
    # class (netfl.scenario.kinds).
    WORLDS: ClassVar[tuple[str, ...]] = ("edge", "iov", "leo")
    USES_CLOUD: ClassVar[bool] = False
    CHARGES_COST: ClassVar[bool] = False
    # whether it aggregates asynchronously (its run follows each update's life: updates.csv)
    ASYNCHRONOUS: ClassVar[bool] = False
    # whether it runs on a leo world whose satellites are the clients (ground stations as edge
    # servers, reached only in contact windows)
    SATELLITE_CLIENTS: ClassVar[bool] = False
    IMPLEMENTATION: ClassVar[str | None] = None

    rounds: PositiveInt = 100
    local_steps: PositiveInt = 5
    lr: PositiveFloat = 0.05
    momentum: float = Field(0.0, ge=0, lt=1)
    weight_decay: NonNegativeFloat = 0.0
    batch_size: PositiveInt = 32
    eval_every: PositiveInt = 1
    idle_wait: PositiveDuration = 1.0
    compression: Compression = NoCompressionSpec()

    def check_scenario(self, scenario) -> None:
        """This algorithm's checks against the rest of ``scenario`` (its world, data, stop),
        run after the world's own (which has checked WORLDS and USES_CLOUD); a ValueError
        names the fields. Override it (calling this one) to add a kind's own needs."""
        stop = scenario.stop
        used = [name for name in ("max_cost", "target_check_cost")
                if getattr(stop, name) is not None]
        if used and not self.CHARGES_COST:
            from netfl.scenario.kinds import algorithm_kinds, algorithm_spec

            charging = [k for k in algorithm_kinds() if algorithm_spec(k).CHARGES_COST]
            raise ValueError(f"stop.{used[0]} is on Group-FEL's eq. (5) cost, which "
                             f"{self.kind} does not charge; use it with group-fel or its "
                             f"baselines ({', '.join(charging)})")


class ConstantLr(Section):
    """eta_k = algorithm.lr."""

    kind: Literal["constant"] = "constant"


class InvSqrtLr(Section):
    """eta_k = scale / (K sqrt(k + 1)), the Fed-CHS paper's experimental setting (scale 1)."""

    kind: Literal["inv-sqrt"]
    scale: PositiveFloat = 1.0


class InvPowerLr(Section):
    """eta_k = 1 / (L K^q), the Fed-CHS paper's second configuration (q >= 2 in its theory)."""

    kind: Literal["inv-power"]
    L: PositiveFloat = 1.0
    q: float = Field(2.0, gt=0)


LrSchedule = Annotated[ConstantLr | InvSqrtLr | InvPowerLr, Field(discriminator="kind")]
