"""The plug-in registry: finding the user's own algorithms, models, partitions and data sets, and
checking their Specs.

A scenario's ``algorithm.kind`` (likewise ``model.kind``, ``data.partition.kind``, and
``data.dataset`` given as a section with a ``kind``) that is not one of netfl's names is looked
up two ways:

* an installed package's entry point in the group ``netfl.algorithms`` (``netfl.models``,
  ``netfl.partitions``, ``netfl.datasets``; its name is the kind)::

      [project.entry-points."netfl.algorithms"]
      hier-prox = "mypkg.algos:HierProx"

* a reference ``package.module:Class`` written in the scenario itself (no installation needed
  beyond the module being importable).

Either names a class whose ``Spec`` attribute is its parameter model, with ``kind: str``: for an
algorithm an AlgorithmSpec (whose ``WORLDS``, ``USES_CLOUD`` and ``check_scenario`` say where it
runs and what it needs), for a model a TorchModel, for a partition or a data set a Section.
The schema knows a plug-in by its Spec only; what the class itself must be (an
``Algorithm``, a class with ``build``, ``split`` or ``load``) is checked where netfl builds it
(netfl.algorithms.registry, netfl.extensions.call_extension). docs/extending.md is the tutorial.

This module imports neither torch, the algorithms, the network nor the compute layer: the
scenario schema uses it to validate.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import typing

from netfl.errors import NetflError
from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.kinds import world_kinds
from netfl.scenario.model_base import TorchModel
from netfl.scenario.types import Section

ALGORITHM_GROUP = "netfl.algorithms"
MODEL_GROUP = "netfl.models"
PARTITION_GROUP = "netfl.partitions"
DATASET_GROUP = "netfl.datasets"

# each group: what its plug-ins are called, the base their Spec subclasses, and what the class
# must be (checked where netfl builds it)
_GROUPS: dict[str, tuple[str, type, str]] = {
    ALGORITHM_GROUP: ("algorithm", AlgorithmSpec, "a subclass of netfl.algorithms.base.Algorithm"),
    MODEL_GROUP: ("model", TorchModel, "a class with build(spec, input_shape, num_classes)"),
    PARTITION_GROUP: ("partition", Section,
                      "a class with split(spec, labels, num_classes, groups, rng)"),
    DATASET_GROUP: ("dataset", Section, "a class with load(spec, n_clients, rng)"),
}


class ExtensionError(NetflError):
    """An extension named by a scenario could not be found, imported or used; the message names
    the package or module and what failed."""


def is_reference(kind: str) -> bool:
    """Whether ``kind`` is a ``module:attribute`` reference rather than a registered name."""
    return ":" in kind


def installed(group: str = ALGORITHM_GROUP) -> dict[str, importlib.metadata.EntryPoint]:
    """The entry points of ``group`` that installed packages declare, by name (not loaded)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


def import_reference(what: str, reference: str) -> tuple[object, str]:
    """The object a ``package.module:Attribute`` reference names, and where it was found;
    raises ExtensionError naming the module and what failed. netfl's own kinds are resolved
    this way too (their Spec's IMPLEMENTATION or BUILDER)."""
    module_name, _, attribute = reference.partition(":")
    where = f"module {module_name!r}"
    try:
        obj = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ExtensionError(f"{what} {reference!r}: cannot import {where}: {exc} (is it "
                             f"installed, or its folder on PYTHONPATH?)") from None
    except (Exception, SystemExit) as exc:  # an error inside the user's module
        raise ExtensionError(f"{what} {reference!r}: importing {where} failed: "
                             f"{type(exc).__name__}: {exc}") from None
    try:
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise ExtensionError(f"{what} {reference!r}: {where} has no attribute "
                             f"{attribute!r}") from None
    return obj, where


@functools.cache
def located(group: str, kind: str) -> tuple[type, str]:
    """The plug-in class ``kind`` names in ``group`` (one of the four groups above) and where it
    was found (a package's entry point, or a module), its Spec checked: a subclass of the
    group's base with ``kind: str`` (an algorithm's also with WORLDS among the world kinds,
    USES_CLOUD a bool and check_scenario callable). Raises ExtensionError naming what failed.
    Cached: a plug-in is imported once per process (clear_cache forgets)."""
    what, spec_base, _ = _GROUPS[group]
    if is_reference(kind):
        obj, where = import_reference(what, kind)
    else:
        entry = installed(group).get(kind)
        if entry is None:
            raise ExtensionError(f"no {what} {kind!r}")
        where = f"package {entry.dist.name if entry.dist else '?'} (entry point {entry.value})"
        try:
            obj = entry.load()
        except (Exception, SystemExit) as exc:
            raise ExtensionError(f"{what} {kind!r} of {where} failed to load: "
                                 f"{type(exc).__name__}: {exc}") from None
    if not isinstance(obj, type):
        raise ExtensionError(f"{what} {kind!r} ({where}) is {obj!r}, not {expected(group)}")
    spec = getattr(obj, "Spec", None)
    if not (isinstance(spec, type) and issubclass(spec, spec_base)):
        raise ExtensionError(f"{what} {kind!r} ({where}) needs a Spec attribute: a subclass "
                             f"of {spec_base.__module__}.{spec_base.__name__} with its "
                             f"parameters")
    annotation = spec.model_fields["kind"].annotation if "kind" in spec.model_fields else None
    if annotation is not str:
        raise ExtensionError(f"{what} {kind!r} ({where}): its Spec must declare "
                             f"'kind: str' (got {typing.get_origin(annotation) or annotation}): "
                             f"the kind is the name the scenario gives it")
    if group == ALGORITHM_GROUP:
        _check_declarations(spec, f"{what} {kind!r} ({where})")
    return obj, where


def _check_declarations(spec: type, who: str) -> None:
    """An algorithm Spec's WORLDS, USES_CLOUD and check_scenario are what the schema reads."""
    worlds = spec.WORLDS
    if (not isinstance(worlds, tuple | list) or not worlds
            or not all(isinstance(w, str) and w in world_kinds() for w in worlds)):
        raise ExtensionError(f"{who}: its Spec's WORLDS must be a tuple of world kinds "
                             f"({', '.join(world_kinds())}), got {worlds!r}")
    if not isinstance(spec.USES_CLOUD, bool):
        raise ExtensionError(f"{who}: its Spec's USES_CLOUD must be True or False, got "
                             f"{spec.USES_CLOUD!r}")
    if not callable(getattr(spec, "check_scenario", None)):
        raise ExtensionError(f"{who}: its Spec's check_scenario must be a method")


def expected(group: str) -> str:
    """What a plug-in of ``group`` must be, in words (for the messages of those that check it:
    a subclass of Algorithm, a class with build, split or load)."""
    return _GROUPS[group][2]


def load_for_group(group: str, kind: str) -> type:
    """The plug-in class ``kind`` names in ``group``, its Spec checked (see located)."""
    return located(group, kind)[0]


def clear_cache() -> None:
    """Forget loaded extensions (tests that write modules of their own)."""
    located.cache_clear()
