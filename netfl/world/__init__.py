"""Who is where, and when: the world graph each scenario's network is laid on."""

from netfl.world.base import World
from netfl.world.edge import build_edge_world
from netfl.world.iov import RoadWorld, build_iov_world
from netfl.world.leo import OrbitWorld, build_leo_world


def build_world(spec, rng) -> World:
    """Build the world of a scenario's ``world`` section (dispatch on ``kind``)."""
    if spec.kind == "edge":
        return build_edge_world(spec, rng)
    if spec.kind == "iov":
        return build_iov_world(spec, rng)
    if spec.kind == "leo":
        return build_leo_world(spec, rng)
    raise ValueError(f"unknown world kind {spec.kind!r}")


__all__ = ["OrbitWorld", "RoadWorld", "World", "build_world"]
