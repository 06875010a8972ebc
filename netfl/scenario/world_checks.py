"""Cross-section checks the world kinds share (each world's ``check_scenario`` calls them)."""

from __future__ import annotations

from netfl.scenario.kinds import algorithm_kinds, algorithm_spec
from netfl.scenario.partitions import BUILTIN_PARTITIONS

# partitions that do not split data by edge server (which moves on a mobile world)
MOBILE_PARTITIONS = ("iid", "dirichlet", "labels", "natural", "file")


def is_extension(algo) -> bool:
    """Whether an algorithm section is a plug-in's (netfl.scenario.plugins), not netfl's own."""
    return algorithm_spec(algo.kind) is None


def rates_given(scenario, classes) -> None:
    """Link classes whose rate only the links section can give must have one."""
    for name in classes:
        if getattr(scenario.links, name).rate is None:
            raise ValueError(f"links.{name}.rate is required (e.g. '1 Gbps')")


def runs_on(scenario, world_kind: str) -> None:
    """The algorithm must declare ``world_kind`` among its WORLDS."""
    algo = scenario.algorithm
    if world_kind in algo.WORLDS:
        return
    if is_extension(algo):
        raise ValueError(f"algorithm {algo.kind!r} declares it runs on "
                         f"{', '.join(algo.WORLDS)} worlds (its Spec's WORLDS), not on "
                         f"{world_kind}")
    a = "an" if world_kind == "iov" else "a"
    able = [k for k in algorithm_kinds() if world_kind in algorithm_spec(k).WORLDS]
    raise ValueError(f"algorithm {algo.kind!r} does not run on {a} {world_kind} world "
                     f"(clusters change as nodes move); use one of {', '.join(able)}")


def mobile_common(scenario, kind: str) -> None:
    """Checks shared by the iov and leo worlds."""
    a = "an" if kind == "iov" else "a"
    runs_on(scenario, kind)
    partition = scenario.data.partition.kind
    if partition not in MOBILE_PARTITIONS and partition in BUILTIN_PARTITIONS:
        raise ValueError(f"data.partition.kind {partition!r} splits data by edge server, which "
                         f"moves here; on {a} {kind} world use {', '.join(MOBILE_PARTITIONS)}")
    access = scenario.links.access
    if access.shared:
        where = ("world.medium (802.11p by default)" if kind == "iov"
                 else "world.beams (shared by default)")
        raise ValueError(f"links.access.shared does not apply on {a} {kind} world: who "
                         f"shares the radio is {where}")
    if access.availability.kind != "always":
        raise ValueError(f"on {a} {kind} world access links go up and down with coverage; "
                         f"links.access.availability must be always")
