"""Who is where, and when: the world graph each scenario's network is laid on."""

from netfl.extensions import import_reference
from netfl.world.base import World
from netfl.world.iov import RoadWorld
from netfl.world.leo import OrbitWorld


def build_world(spec, rng) -> World:
    """Build the world of a scenario's ``world`` section with the function its kind names
    (``BUILDER``, netfl.scenario.kinds)."""
    builder, _ = import_reference("world", type(spec).BUILDER)
    return builder(spec, rng)


__all__ = ["OrbitWorld", "RoadWorld", "World", "build_world"]
