"""The top-level :class:`Scenario`: what one run simulates."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, PrivateAttr, model_validator

from netfl.scenario.algorithms import BUILTIN_KINDS, Algorithm, FedAvgSpec
from netfl.scenario.group_fel import GROUP_KINDS, GroupFelSpec
from netfl.scenario.iov import IovWorld
from netfl.scenario.leo import LeoWorld
from netfl.scenario.partitions import BUILTIN_PARTITIONS
from netfl.scenario.sections import (
    DataSpec,
    Devices,
    EdgeWorld,
    Links,
    Model,
    Output,
    Stop,
)
from netfl.scenario.types import Section

CLOUD_ALGORITHMS = ("fedavg", "fedavg-qsgd", "hier-fedavg", "hier-local-qsgd", "hfl-pwp",
                    "hier-mo") + GROUP_KINDS
IOV_ALGORITHMS = ("fed-chs", "hier-fedavg", "fedavg")
IOV_PARTITIONS = ("iid", "dirichlet", "labels", "natural", "file")

World = Annotated[EdgeWorld | IovWorld | LeoWorld, Field(discriminator="kind")]


def is_extension(algo) -> bool:
    """Whether an algorithm section is an extension's (netfl.extensions), not netfl's own."""
    return algo.kind not in BUILTIN_KINDS


def uses_cloud(algo) -> bool:
    """Whether the algorithm aggregates at the cloud (the world must have one)."""
    return algo.kind in CLOUD_ALGORITHMS or (is_extension(algo) and algo.USES_CLOUD)


class Scenario(Section):
    """A complete scenario. Build one with :func:`netfl.load_scenario` (file, dict, overrides)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100)
    seed: int = Field(0, ge=0, le=2**63 - 1)
    world: World
    links: Links = Links()
    devices: Devices = Devices()
    data: DataSpec = DataSpec()
    model: Model
    algorithm: Algorithm
    stop: Stop = Stop()
    output: Output = Output()

    _source: str | None = PrivateAttr(default=None)
    _lines: dict = PrivateAttr(default_factory=dict)  # key path -> line in _source
    _overridden: set = PrivateAttr(default_factory=set)  # key paths --set gave

    @property
    def source(self) -> str | None:
        """The file this scenario was read from (None when built from a dict)."""
        return self._source

    @model_validator(mode="after")
    def _cross_section(self) -> Scenario:
        if isinstance(self.world, IovWorld):
            return self._iov_checks()
        if isinstance(self.world, LeoWorld):
            return self._leo_checks()
        self._rates_given(("access", "backhaul", "core"))
        algo = self.algorithm
        if isinstance(algo, FedAvgSpec) and algo.clients_per_round is not None:
            if algo.clients_per_round > self.world.clients:
                raise ValueError(
                    f"algorithm.clients_per_round ({algo.clients_per_round}) exceeds "
                    f"world.clients ({self.world.clients})"
                )
        self._extension_runs_on("edge")
        if uses_cloud(algo) and self.world.cloud == "none":
            raise ValueError(f"{algo.kind} aggregates at the cloud: set world.cloud to 'all' "
                             f"or a list of edge servers")
        count = getattr(algo, "edges_per_round", None)
        if count is not None and count > self.world.edge_servers:
            raise ValueError(f"algorithm.edges_per_round ({count}) exceeds world.edge_servers "
                             f"({self.world.edge_servers})")
        for field in ("cluster_periods", "sample_sizes"):
            per_cluster = getattr(algo, field, None)
            if per_cluster is not None and len(per_cluster) != self.world.edge_servers:
                raise ValueError(f"algorithm.{field} has {len(per_cluster)} entries; it needs "
                                 f"one per edge server ({self.world.edge_servers})")
        partition = self.data.partition
        if partition.kind == "per-edge" and len(partition.edges) != self.world.edge_servers:
            raise ValueError(f"data.partition.edges has {len(partition.edges)} entries; it needs "
                             f"one per edge server ({self.world.edge_servers})")
        if algo.kind == "mll-sgd" and algo.compression.kind == "qsgd":
            raise ValueError("mll-sgd hubs exchange whole models, which QSGD (an update "
                             "quantizer) does not fit; use compression int8 or none")
        if self.stop.max_cost is not None and not isinstance(algo, GroupFelSpec):
            raise ValueError(f"stop.max_cost is a budget of Group-FEL's eq. (5) cost, which "
                             f"{algo.kind} does not charge; use it with group-fel or its "
                             f"baselines ({', '.join(GROUP_KINDS)})")
        if algo.kind == "fed-chs" and self.world.topology.kind == "star":
            raise ValueError("fed-chs passes the model between neighbouring edge servers: give "
                             "world.topology a ring, random or file graph (a star has no "
                             "edge-edge links)")
        return self

    def _leo_checks(self) -> Scenario:
        """What a leo world allows: the mobile worlds' algorithms and partitions; link rates
        from the world section (GSL, ISL, gateways) rather than the links classes."""
        algo, world = self.algorithm, self.world
        self._mobile_common("leo")
        if (algo.kind in ("hier-fedavg", "fedavg") or (
                is_extension(algo) and algo.USES_CLOUD)) and world.ground_stations is None:
            raise ValueError(f"{algo.kind} aggregates at the cloud: give "
                             f"world.ground_stations (gateways to the cloud)")
        if algo.kind == "fed-chs" and world.isl.kind == "none" and world.ground_stations is None:
            raise ValueError("fed-chs hands the model between satellites: give world.isl "
                             "kind grid, or world.ground_stations to relay through the ground")
        for name, where in (("access", "world.gsl"), ("backhaul", "world.isl"),
                            ("core", "world.ground_stations")):
            spec = getattr(self.links, name)
            given = spec.model_fields_set if name in self.links.model_fields_set else set()
            for field in ("rate", "rate_up", "rate_down", "delay"):
                if field in given:
                    raise ValueError(f"on a leo world links.{name}.{field} comes from {where} "
                                     f"and the geometry; remove it")
        return self

    def _extension_runs_on(self, world_kind: str) -> None:
        algo = self.algorithm
        if is_extension(algo) and world_kind not in algo.WORLDS:
            raise ValueError(f"algorithm {algo.kind!r} declares it runs on "
                             f"{', '.join(algo.WORLDS)} worlds (its Spec's WORLDS), not on "
                             f"{world_kind}")

    def _rates_given(self, classes) -> None:
        """Link classes whose rate only the links section can give must have one."""
        for name in classes:
            if getattr(self.links, name).rate is None:
                raise ValueError(f"links.{name}.rate is required (e.g. '1 Gbps')")

    def _mobile_common(self, kind: str) -> None:
        """Checks shared by the iov and leo worlds."""
        algo, a = self.algorithm, "an" if kind == "iov" else "a"
        if is_extension(algo):
            self._extension_runs_on(kind)
        elif algo.kind not in IOV_ALGORITHMS:
            raise ValueError(f"algorithm {algo.kind!r} does not run on {a} {kind} world "
                             f"(clusters change as nodes move); use one of "
                             f"{', '.join(IOV_ALGORITHMS)}")
        if self.data.partition.kind not in IOV_PARTITIONS and (
                self.data.partition.kind in BUILTIN_PARTITIONS):
            raise ValueError(f"data.partition.kind {self.data.partition.kind!r} splits data by "
                             f"edge server, which moves here; on {a} {kind} world use "
                             f"{', '.join(IOV_PARTITIONS)}")
        access = self.links.access
        if access.shared:
            where = ("world.medium (802.11p by default)" if kind == "iov"
                     else "world.beams (shared by default)")
            raise ValueError(f"links.access.shared does not apply on {a} {kind} world: who "
                             f"shares the radio is {where}")
        if access.availability.kind != "always":
            raise ValueError(f"on {a} {kind} world access links go up and down with coverage; "
                             f"links.access.availability must be always")
        if self.stop.max_cost is not None:
            raise ValueError(f"stop.max_cost is a budget of Group-FEL's eq. (5) cost, which "
                             f"{algo.kind} does not charge")

    def _iov_checks(self) -> Scenario:
        """What an iov world allows: its algorithms, partitions over a vehicle population, and
        access links whose rate and ups and downs come from the radio and the road."""
        algo, world = self.algorithm, self.world
        self._mobile_common("iov")
        self._rates_given(("backhaul", "core"))
        if (algo.kind in ("hier-fedavg", "fedavg") or (
                is_extension(algo) and algo.USES_CLOUD)) and not world.cloud:
            raise ValueError(f"{algo.kind} aggregates at the cloud: set world.cloud to true")
        access = self.links.access
        given = "access" in self.links.model_fields_set  # the edge default's rate is not used
        if given and (access.rate or access.rate_up or access.rate_down):
            raise ValueError("on an iov world the access rate comes from world.radio; remove "
                             "links.access.rate / rate_up / rate_down")
        return self
