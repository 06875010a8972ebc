"""netfl's own algorithm and world kinds, registered the way extensions are."""

import pytest
from pydantic import ValidationError

from netfl.algorithms.base import Algorithm
from netfl.algorithms.registry import algorithm_class
from netfl.extensions import import_reference
from netfl.scenario import kinds
from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.kinds import algorithm_kinds, algorithm_spec, builtin_algorithm, world_spec

# What netfl.scenario.schema listed by name before the kinds declared it themselves: the
# declarations must say the same, kind by kind.
FORMER_CLOUD = {"fedavg", "fedavg-qsgd", "hier-fedavg", "hier-local-qsgd", "hfl-pwp", "hier-mo",
                "group-fel", "group-fedavg", "group-fedprox", "group-scaffold", "ouea", "share",
                "fedclar"}
MOBILE = {"fed-chs", "hier-fedavg", "fedavg", "chfl", "cfl", "sfl", "hfl-pwp"}
FORMER_GROUP = {"group-fel", "group-fedavg", "group-fedprox", "group-scaffold", "ouea", "share",
                "fedclar"}
# kinds added since, with what they declare: the asynchronous ones (the cloud aggregates), on
# every world
ASYNCHRONOUS = {"fedasync", "fedbuff", "hier-async", "async-hfl"}
FORMER_CLOUD |= ASYNCHRONOUS
MOBILE |= ASYNCHRONOUS
# ground-assisted FL: satellites as clients only (a leo world), the cloud behind the stations
SATELLITE_ONLY = {"fedsat"}
FORMER_CLOUD |= SATELLITE_ONLY
# the kinds that run with satellites as clients
SATELLITE_CLIENTS = {"fedavg", "hier-fedavg"} | ASYNCHRONOUS | SATELLITE_ONLY


def test_every_kind_declares_what_the_schema_used_to_list():
    assert len(algorithm_kinds()) == 19 + len(ASYNCHRONOUS) + len(SATELLITE_ONLY)
    for kind in algorithm_kinds():
        spec = algorithm_spec(kind)
        assert spec.USES_CLOUD == (kind in FORMER_CLOUD), kind
        worlds = ({"leo"} if kind in SATELLITE_ONLY
                  else {"edge", "iov", "leo"} if kind in MOBILE else {"edge"})
        assert set(spec.WORLDS) == worlds, kind
        assert spec.CHARGES_COST == (kind in FORMER_GROUP), kind
        assert spec.SATELLITE_CLIENTS == (kind in SATELLITE_CLIENTS), kind


@pytest.mark.parametrize("kind", algorithm_kinds())
def test_every_algorithm_kind_names_its_class(kind):
    cls = algorithm_class(kind)
    assert issubclass(cls, Algorithm)
    assert f"{cls.__module__}:{cls.__name__}" == algorithm_spec(kind).IMPLEMENTATION


@pytest.mark.parametrize("kind", ["edge", "iov", "leo"])
def test_every_world_kind_names_its_builder(kind):
    builder, _ = import_reference("world", world_spec(kind).BUILDER)
    assert callable(builder) and builder.__name__ == f"build_{kind}_world"


def test_a_kind_registers_in_one_place(monkeypatch):
    from typing import Literal

    monkeypatch.setattr(kinds, "_ALGORITHMS", dict(kinds._ALGORITHMS))

    @builtin_algorithm
    class EchoSpec(AlgorithmSpec):
        kind: Literal["echo"]
        IMPLEMENTATION = "netfl.algorithms.fedavg:FedAvg"

    assert algorithm_spec("echo") is EchoSpec and "echo" in algorithm_kinds()
    assert algorithm_class("echo").__name__ == "FedAvg"
    union = kinds.union_of("algorithms")
    from pydantic import TypeAdapter

    assert isinstance(TypeAdapter(union).validate_python({"kind": "echo"}), EchoSpec)
    with pytest.raises(ValidationError):
        TypeAdapter(union).validate_python({"kind": "echo", "rounds": 0})


def test_registration_refuses_a_spec_without_its_class_or_a_kind_taken(monkeypatch):
    from typing import Literal

    monkeypatch.setattr(kinds, "_ALGORITHMS", dict(kinds._ALGORITHMS))

    class Nameless(AlgorithmSpec):
        kind: Literal["nameless"]

    with pytest.raises(TypeError, match="IMPLEMENTATION = 'module:attribute'"):
        builtin_algorithm(Nameless)

    class Twice(AlgorithmSpec):
        kind: Literal["fed-chs"]
        IMPLEMENTATION = "netfl.algorithms.fed_chs:FedCHS"

    with pytest.raises(TypeError, match="kind 'fed-chs' registered twice"):
        builtin_algorithm(Twice)
