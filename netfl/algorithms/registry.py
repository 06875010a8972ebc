"""From a scenario's ``algorithm.kind`` to its class. No name guessing: netfl's own kinds name
their class in their Spec (``IMPLEMENTATION``, netfl.scenario.kinds), a plug-in's is found by
its entry point or ``module:Class`` reference (netfl.scenario.plugins, which checks its Spec);
that the class is an :class:`Algorithm` is checked here, where it is built."""

from __future__ import annotations

from netfl.algorithms.base import Algorithm
from netfl.extensions import (
    ALGORITHM_GROUP,
    ExtensionError,
    expected,
    import_reference,
    located,
)
from netfl.scenario.kinds import algorithm_spec


def algorithm_class(kind: str) -> type[Algorithm]:
    """The class of ``kind``: netfl's own, or a plug-in's (an installed entry point or a
    ``module:Class`` reference). Raises ExtensionError where a plug-in cannot be loaded or its
    class is not a subclass of Algorithm."""
    spec = algorithm_spec(kind)
    if spec is not None:
        return import_reference("algorithm", spec.IMPLEMENTATION)[0]
    found, where = located(ALGORITHM_GROUP, kind)
    if not issubclass(found, Algorithm):
        raise ExtensionError(f"algorithm {kind!r} ({where}) is {found!r}, not "
                             f"{expected(ALGORITHM_GROUP)}")
    return found
