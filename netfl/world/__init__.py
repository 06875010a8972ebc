"""Who is where, and when: the world graph each scenario's network is laid on."""

from netfl.world.base import World
from netfl.world.edge import build_edge_world


def build_world(spec, rng) -> World:
    """Build the world of a scenario's ``world`` section (dispatch on ``kind``)."""
    if spec.kind == "edge":
        return build_edge_world(spec, rng)
    raise ValueError(f"unknown world kind {spec.kind!r}")


__all__ = ["World", "build_world"]
