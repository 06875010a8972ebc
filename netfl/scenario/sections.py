"""Scenario sections other than the algorithm: world, links, devices, data, model, stop, output.

Variants are chosen by ``kind`` (discriminated unions). Every field that has a unit takes a
string with one ("10 Mbps"); the parsed value is in the base unit (seconds, bit/s, bytes, FLOP/s).
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

from pydantic import (
    Field,
    NonNegativeInt,
    PositiveInt,
    model_validator,
)

from netfl.scenario.data import DatasetName, DataSpec, SyntheticSpec  # noqa: F401 (re-exported)
from netfl.scenario.device_parts import (  # noqa: F401
    ClientBattery,
    DevicePower,
    DeviceTraceSpec,
)
from netfl.scenario.kinds import builtin_world
from netfl.scenario.models import (  # noqa: F401 (re-exported: the model section's kinds)
    ArchitectureModel,
    BuiltinModel,
    FakeModel,
    LogisticModel,
    MlpModel,
    Model,
    TorchModel,
)
from netfl.scenario.partitions import (  # noqa: F401 (re-exported: the data section's kinds)
    ClientSizes,
    DirichletPartition,
    EdgeIidDirichletPartition,
    EdgeLabelsPartition,
    EdgeLevelPartition,
    EqualSizes,
    FilePartition,
    IidPartition,
    LabelsPartition,
    NaturalPartition,
    NormalSizes,
    Partition,
    PerEdgePartition,
)
from netfl.scenario.run_sections import Output, Stop  # noqa: F401 (re-exported)
from netfl.scenario.transport import TcpTransport, Transport
from netfl.scenario.types import (
    Duration,
    ExistingFile,
    Flops,
    PositiveDuration,
    Probability,
    Rate,
    Section,
    Size,
)
from netfl.scenario.world_checks import rates_given, runs_on
from netfl.sim.onoff import check_intervals

# ----------------------------------------------------------------------------------- world


class EvenAssignment(Section):
    """Clients split into contiguous blocks, one per edge server (sizes differ by at most one)."""

    kind: Literal["even"] = "even"


class SizedAssignment(Section):
    """``sizes[i]`` clients go to edge server i, in client order."""

    kind: Literal["by-size"]
    sizes: list[PositiveInt]


class FileAssignment(Section):
    """A CSV file with header ``client,edge_server`` (integer indices)."""

    kind: Literal["file"]
    path: ExistingFile


Assignment = Annotated[
    EvenAssignment | SizedAssignment | FileAssignment, Field(discriminator="kind")
]


class StarTopology(Section):
    """No edge-edge links: every edge server connects only to the cloud."""

    kind: Literal["star"] = "star"


class RingTopology(Section):
    kind: Literal["ring"]


class RandomTopology(Section):
    """A random connected graph whose degrees never exceed ``max_degree``: a random spanning tree,
    then ``extra_edges`` more edges where degrees allow."""

    kind: Literal["random"]
    max_degree: int = Field(3, ge=2)
    extra_edges: NonNegativeInt = 2


class FileTopology(Section):
    """GraphML (.graphml) or edge list (one ``u v`` pair per line) over edge-server indices
    0..M-1; edges may carry ``rate`` and ``delay`` attributes that override the backhaul class."""

    kind: Literal["file"]
    path: ExistingFile


Topology = Annotated[
    StarTopology | RingTopology | RandomTopology | FileTopology, Field(discriminator="kind")
]


@builtin_world
class EdgeWorld(Section):
    """Static HFL world: clients -> edge servers -> (optional) cloud."""

    kind: Literal["edge"]
    BUILDER: ClassVar[str] = "netfl.world.edge:build_edge_world"
    clients: PositiveInt
    edge_servers: PositiveInt
    assignment: Assignment = EvenAssignment()
    topology: Topology = StarTopology()
    cloud: Literal["all", "none"] | list[NonNegativeInt] = Field(
        "all", description="edge servers with a core link to the cloud"
    )

    @model_validator(mode="after")
    def _consistent(self) -> EdgeWorld:
        m = self.edge_servers
        if self.clients < m:
            raise ValueError(f"clients ({self.clients}) must be at least edge_servers ({m})")
        if isinstance(self.assignment, SizedAssignment):
            sizes = self.assignment.sizes
            if len(sizes) != m or sum(sizes) != self.clients:
                raise ValueError(
                    f"assignment.sizes {sizes} must have edge_servers={m} entries summing to "
                    f"clients={self.clients}"
                )
        if isinstance(self.cloud, list) and any(i >= m for i in self.cloud):
            raise ValueError(f"cloud lists edge server indices {self.cloud}; valid: 0..{m - 1}")
        if isinstance(self.topology, StarTopology) and self.cloud != "all":
            raise ValueError("a star topology needs cloud: all (the cloud is the hub)")
        return self

    def check_scenario(self, scenario) -> None:
        """What an edge world needs of the rest of a scenario (netfl.scenario.kinds)."""
        rates_given(scenario, ("access", "backhaul", "core"))
        runs_on(scenario, "edge")
        algo, m = scenario.algorithm, self.edge_servers
        if algo.USES_CLOUD and self.cloud == "none":
            raise ValueError(f"{algo.kind} aggregates at the cloud: set world.cloud to 'all' "
                             f"or a list of edge servers")
        count = getattr(algo, "edges_per_round", None)
        if count is not None and count > m:
            raise ValueError(f"algorithm.edges_per_round ({count}) exceeds world.edge_servers "
                             f"({m})")
        for field in ("cluster_periods", "sample_sizes"):
            per_cluster = getattr(algo, field, None)
            if per_cluster is not None and len(per_cluster) != m:
                raise ValueError(f"algorithm.{field} has {len(per_cluster)} entries; it needs "
                                 f"one per edge server ({m})")
        partition = scenario.data.partition
        if partition.kind == "per-edge" and len(partition.edges) != m:
            raise ValueError(f"data.partition.edges has {len(partition.edges)} entries; it needs "
                             f"one per edge server ({m})")


# ----------------------------------------------------------------------------------- links


class NoLoss(Section):
    kind: Literal["none"] = "none"


# Retransmissions and retries are each simulated: bounded so that a run always ends.
MAX_ATTEMPTS = 1000
MAX_BACKOFF_LOG10_S = 12.0


class RetransmitLoss(Section):
    """Each hop delivery is lost with ``probability`` and sent again, up to ``max_retransmissions``
    times; past that the transfer fails."""

    kind: Literal["retransmit"]
    probability: Annotated[float, Field(ge=0, lt=1)]
    # each retransmission is simulated: 1e9 of them at probability 0.999999 never ended
    max_retransmissions: int = Field(10, ge=0, le=MAX_ATTEMPTS)


class RateReductionLoss(Section):
    """Loss as goodput: the link carries ``rate * (1 - probability)``."""

    kind: Literal["rate-reduction"]
    probability: Annotated[float, Field(ge=0, lt=1)]


Loss = Annotated[NoLoss | RetransmitLoss | RateReductionLoss, Field(discriminator="kind")]


class AlwaysUp(Section):
    kind: Literal["always"] = "always"


class RandomOnOff(Section):
    """Exponential up and down periods with these means (independent per link or client)."""

    kind: Literal["random"]
    mean_up: PositiveDuration
    mean_down: PositiveDuration


class ScheduledOnOff(Section):
    """Down during each [start, end] interval of simulated time, e.g. ``[["10 s", "20 s"]]``."""

    kind: Literal["schedule"]
    down: list[tuple[Duration, Duration]]

    @model_validator(mode="after")
    def _ordered(self) -> ScheduledOnOff:
        check_intervals(self.down)
        return self


LinkAvailability = Annotated[AlwaysUp | RandomOnOff | ScheduledOnOff, Field(discriminator="kind")]


class LinkSpec(Section):
    """One link class. Each direction has its own capacity; ``rate_up`` (towards the cloud) and
    ``rate_down`` default to ``rate``. With ``shared``, all access links of one edge server share
    its capacity per direction (one radio cell) instead of each having their own. ``rate`` is
    required everywhere but on an iov world's access class, whose rates come from its radio.
    ``transport`` overrides ``links.transport`` on this class's links (docs/models/network.md)."""

    rate: Rate | None = None
    rate_up: Rate | None = None
    rate_down: Rate | None = None
    delay: Duration = 0.0
    loss: Loss = NoLoss()
    availability: LinkAvailability = AlwaysUp()
    shared: bool = False
    transport: Transport | None = None  # this class's, instead of links.transport


class RetrySpec(Section):
    """A failed transfer is tried again ``attempts`` more times, after ``backoff`` seconds
    multiplied by ``backoff_factor`` at each further attempt."""

    attempts: int = Field(0, ge=0, le=MAX_ATTEMPTS)
    backoff: Duration = 1.0
    backoff_factor: float = Field(2.0, ge=1)

    @model_validator(mode="after")
    def _finite_backoff(self) -> RetrySpec:
        if self.attempts > 1 and self.backoff > 0 and (
                math.log10(self.backoff) + (self.attempts - 1) * math.log10(self.backoff_factor)
                > MAX_BACKOFF_LOG10_S):
            raise ValueError(f"the last of {self.attempts} back-offs would be {self.backoff:g} "
                             f"s x {self.backoff_factor:g}^{self.attempts - 1}, past 1e12 s "
                             f"(30,000 years): fewer attempts or a smaller backoff_factor")
        return self


class Links(Section):
    """Link classes: access (client-edge), backhaul (edge-edge), core (edge-cloud); how
    transfers cross them (``transport``, netfl/scenario/transport.py); retries."""

    access: LinkSpec = LinkSpec(rate=20e6, delay=0.005)
    backhaul: LinkSpec = LinkSpec(rate=1e9, delay=0.002)
    core: LinkSpec = LinkSpec(rate=1e9, delay=0.020)
    transport: Transport = TcpTransport()
    retry: RetrySpec = RetrySpec()
    closed_form: bool = Field(False, description="advance exchanges whose clients own their "
                              "links and devices in closed form (docs/models/network.md)")

    @model_validator(mode="after")
    def _shared_only_access(self) -> Links:
        if self.backhaul.shared or self.core.shared:
            raise ValueError("shared: true applies to the access class only")
        return self


# --------------------------------------------------------------------------------- devices

DevicePreset = Literal[
    "phone", "raspberry-pi-4", "jetson-nano", "jetson-xavier-nx", "edge-server-cpu", "server-gpu"
]


class Stragglers(Section):
    """A ``fraction`` of nodes (drawn once per run) train ``slowdown`` times slower."""

    fraction: Probability
    slowdown: float = Field(ge=1)


class TraceAvailability(Section):
    """A CSV file with header ``client,down_s,up_s``: each row is one outage of one client."""

    kind: Literal["trace"]
    path: ExistingFile


ClientAvailability = Annotated[
    AlwaysUp | RandomOnOff | TraceAvailability, Field(discriminator="kind")
]


class DeviceSpec(Section):
    """A compute profile: a preset, or ``flops`` (effective FLOP/s), with optional overrides.
    ``power``: its draw (default: the preset's, where it has one; energy.md)."""

    preset: DevicePreset | None = None
    flops: Flops | None = None
    memory: Size | None = None
    power: DevicePower | None = None
    # past a sigma of 3 a device is 8,000 times slower at 3 sigma: no fleet looks like that
    jitter: float = Field(0.0, ge=0, le=3, description="sigma of a lognormal factor (median 1)")
    stragglers: Stragglers | None = None

    @model_validator(mode="after")
    def _has_speed(self) -> DeviceSpec:
        if self.preset is None and self.flops is None:
            raise ValueError("give a preset or flops (effective FLOP/s, e.g. '10 GFLOPS')")
        return self


class ClientDevices(DeviceSpec):
    availability: ClientAvailability = AlwaysUp()
    trace: DeviceTraceSpec | None = None
    battery: ClientBattery | None = None

    @model_validator(mode="after")
    def _one_availability(self) -> ClientDevices:
        if (self.trace is not None and self.trace.availability is not None
                and not isinstance(self.availability, AlwaysUp)):
            raise ValueError("availability comes from trace.availability: leave "
                             "availability at its default (always)")
        return self


class ServerDevices(DeviceSpec):
    """Edge or cloud servers; ``accelerators`` jobs run at once, the rest queue."""

    accelerators: PositiveInt = 1


class Devices(Section):
    clients: ClientDevices = ClientDevices(preset="raspberry-pi-4")
    edge: ServerDevices = ServerDevices(preset="jetson-xavier-nx")
    cloud: ServerDevices = ServerDevices(preset="server-gpu", accelerators=4)
