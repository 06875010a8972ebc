"""netfl's own algorithm and world kinds, registered the way an extension registers its own.

An extension is a class named by an entry point or a ``module:Class`` reference, whose ``Spec``
says what it takes and declares what it needs (netfl.scenario.plugins). A built-in kind is its Spec,
decorated here, naming its class by the same kind of reference: an algorithm's Spec has
``IMPLEMENTATION = "netfl.algorithms.fed_chs:FedCHS"``, a world's ``BUILDER =
"netfl.world.edge:build_edge_world"``; both declare ``WORLDS`` / ``USES_CLOUD`` and carry
their own cross-section checks (``check_scenario``). The scenario's unions are made from what
is registered, and the class is imported only when a run needs it, through the loader
plug-ins use. Adding a kind is writing its Spec (in a module the schema imports) and its class.

This module imports neither torch nor the algorithms.
"""

from __future__ import annotations

import typing
from typing import Annotated

from pydantic import Field

_ALGORITHMS: dict[str, type] = {}
_WORLDS: dict[str, type] = {}


def _tags(spec: type) -> tuple[str, ...]:
    return typing.get_args(spec.model_fields["kind"].annotation)


def _register(table: dict[str, type], spec: type, reference: str) -> type:
    value = getattr(spec, reference, None)
    if not (isinstance(value, str) and ":" in value):
        raise TypeError(f"{spec.__name__} needs {reference} = 'module:attribute'")
    for tag in _tags(spec):
        if tag in table and table[tag] is not spec:
            raise TypeError(f"kind {tag!r} registered twice: {table[tag].__name__} and "
                            f"{spec.__name__}")
        table[tag] = spec
    return spec


def builtin_algorithm(spec: type) -> type:
    """Register an algorithm section (an AlgorithmSpec with IMPLEMENTATION) as netfl's own."""
    return _register(_ALGORITHMS, spec, "IMPLEMENTATION")


def builtin_world(spec: type) -> type:
    """Register a world section (with BUILDER, a function (spec, rng) -> World)."""
    return _register(_WORLDS, spec, "BUILDER")


def algorithm_spec(kind: str) -> type | None:
    """The section of netfl's own algorithm ``kind`` (None: not one of netfl's)."""
    return _ALGORITHMS.get(kind)


def world_spec(kind: str) -> type | None:
    """The section of world ``kind`` (None: no such world)."""
    return _WORLDS.get(kind)


def world_kinds() -> tuple[str, ...]:
    """The world kinds, by name (their sections import each other: an iov world's satellite
    backhaul is made of a leo world's parts, so registration order is not theirs)."""
    return tuple(sorted(_WORLDS))


def algorithm_kinds() -> tuple[str, ...]:
    """netfl's own algorithm kinds, in registration order."""
    return tuple(_ALGORITHMS)


def union_of(table: str):
    """The discriminated union (on ``kind``) of the sections registered in ``table``
    ("algorithms" or "worlds"), each once: algorithms in registration order, worlds by kind."""
    if table == "worlds":
        specs = tuple(_WORLDS[kind] for kind in world_kinds())
    else:
        specs = tuple(dict.fromkeys(_ALGORITHMS.values()))
    return Annotated[typing.Union[specs], Field(discriminator="kind")]  # noqa: UP007
