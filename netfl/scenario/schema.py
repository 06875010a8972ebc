"""The top-level :class:`Scenario`: what one run simulates."""

from __future__ import annotations

from pydantic import Field, PrivateAttr, model_validator

from netfl.scenario.algorithms import Algorithm
from netfl.scenario.energy import EnergySpec
from netfl.scenario.kinds import union_of

# isort: off
# the world kinds register as they are imported (netfl list shows them by kind: edge, iov, leo)
from netfl.scenario.sections import (
    DataSpec,
    Devices,
    Links,
    Model,
    Output,
    Stop,
)
from netfl.scenario.iov import IovWorld  # noqa: F401
from netfl.scenario.leo import LeoWorld  # noqa: F401
# isort: on
from netfl.scenario.types import Section

World = union_of("worlds")


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
    energy: EnergySpec | None = None

    _source: str | None = PrivateAttr(default=None)
    _lines: dict = PrivateAttr(default_factory=dict)  # key path -> line in _source
    _overridden: set = PrivateAttr(default_factory=set)  # key paths --set gave

    @property
    def source(self) -> str | None:
        """The file this scenario was read from (None when built from a dict)."""
        return self._source

    @model_validator(mode="after")
    def _cross_section(self) -> Scenario:
        # each kind checks what it needs of the others (netfl.scenario.kinds): the world
        # first (which algorithms run on it, its links), then the algorithm
        self.world.check_scenario(self)
        self.algorithm.check_scenario(self)
        return self
