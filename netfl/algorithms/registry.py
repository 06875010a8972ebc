"""From a scenario's ``algorithm.kind`` to its class. No name guessing: netfl's own kinds name
their class in their Spec (``IMPLEMENTATION``, netfl.scenario.kinds), an extension's is found by
its entry point or ``module:Class`` reference; both are imported by netfl.extensions."""

from __future__ import annotations

from netfl.algorithms.base import Algorithm
from netfl.extensions import import_reference, load_algorithm
from netfl.scenario.kinds import algorithm_spec


def algorithm_class(kind: str) -> type[Algorithm]:
    """The class of ``kind``: netfl's own, or an extension's (an installed entry point or a
    ``module:Class`` reference; netfl.extensions)."""
    spec = algorithm_spec(kind)
    if spec is None:
        return load_algorithm(kind)
    return import_reference("algorithm", spec.IMPLEMENTATION)[0]
