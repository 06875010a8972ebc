"""Finding the user's own algorithms: installed extensions and ``module:Class`` references.

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
algorithm a subclass of :class:`netfl.algorithms.base.Algorithm` (Spec: an AlgorithmSpec); for
a model a class with ``build`` (Spec: a TorchModel); for a partition a class with ``split``,
for a data set a class with ``load`` (Spec: a Section). docs/extending.md is the tutorial.

This module imports neither torch nor the algorithms: the scenario schema uses it to validate.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import typing

from netfl.errors import NetflError

ALGORITHM_GROUP = "netfl.algorithms"
MODEL_GROUP = "netfl.models"
PARTITION_GROUP = "netfl.partitions"
DATASET_GROUP = "netfl.datasets"


class ExtensionError(NetflError):
    """An extension named by a scenario could not be found, imported or used; the message names
    the package or module and what failed."""


def is_reference(kind: str) -> bool:
    """Whether ``kind`` is a ``module:attribute`` reference rather than a registered name."""
    return ":" in kind


def installed(group: str = ALGORITHM_GROUP) -> dict[str, importlib.metadata.EntryPoint]:
    """The entry points of ``group`` that installed packages declare, by name (not loaded)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


def load_algorithm(kind: str) -> type:
    """The algorithm class ``kind`` names: a subclass of netfl.algorithms.base.Algorithm with
    a ``Spec`` (an AlgorithmSpec subclass). Raises ExtensionError naming what failed."""
    return _load(ALGORITHM_GROUP, kind)


def load_model(kind: str) -> type:
    """The model extension ``kind`` names: a class with a ``Spec`` (a subclass of
    netfl.scenario.sections.TorchModel) and ``build(spec, input_shape, num_classes)`` that
    returns a torch.nn.Module."""
    return _load(MODEL_GROUP, kind)


def load_partition(kind: str) -> type:
    """The partition extension ``kind`` names: a class with a ``Spec`` (a subclass of
    netfl.scenario.types.Section) and ``split(spec, labels, num_classes, groups, rng)`` that
    returns each client's training-set indices."""
    return _load(PARTITION_GROUP, kind)


def load_dataset_extension(kind: str) -> type:
    """The data-set extension ``kind`` names: a class with a ``Spec`` (a subclass of
    netfl.scenario.types.Section) and ``load(spec, n_clients, rng)`` that returns a
    netfl.learn.data.Dataset."""
    return _load(DATASET_GROUP, kind)


def _contract(group: str) -> tuple[str, type, object, str]:
    """(what it is called, the base its Spec subclasses, a check of the object, what the check
    wants) for an extension group; imported late: the schema imports this module."""
    if group == ALGORITHM_GROUP:
        from netfl.algorithms.base import Algorithm
        from netfl.scenario.algorithm_base import AlgorithmSpec

        return ("algorithm", AlgorithmSpec,
                lambda obj: isinstance(obj, type) and issubclass(obj, Algorithm),
                "a subclass of netfl.algorithms.base.Algorithm")
    if group == MODEL_GROUP:
        from netfl.scenario.models import TorchModel

        return ("model", TorchModel,
                lambda obj: isinstance(obj, type) and callable(getattr(obj, "build", None)),
                "a class with build(spec, input_shape, num_classes)")
    from netfl.scenario.types import Section

    if group == DATASET_GROUP:
        return ("dataset", Section,
                lambda obj: isinstance(obj, type) and callable(getattr(obj, "load", None)),
                "a class with load(spec, n_clients, rng)")
    return ("partition", Section,
            lambda obj: isinstance(obj, type) and callable(getattr(obj, "split", None)),
            "a class with split(spec, labels, num_classes, groups, rng)")


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
def _load(group: str, kind: str) -> type:
    what, spec_base, usable, wanted = _contract(group)
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
    if not usable(obj):
        raise ExtensionError(f"{what} {kind!r} ({where}) is {obj!r}, not {wanted}")
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
    return obj


def load_for_group(group: str, kind: str) -> type:
    """The extension ``kind`` names in ``group`` (one of the three groups above)."""
    return _load(group, kind)


def clear_cache() -> None:
    """Forget loaded extensions (tests that write modules of their own)."""
    _load.cache_clear()


def call_extension(what: str, kind: str, hook: str, *args):
    """Call ``hook`` (build, split, load) of the extension ``kind``; an exception inside it
    becomes an ExtensionError naming the extension and the hook (never a traceback)."""
    group = {"model": MODEL_GROUP, "partition": PARTITION_GROUP, "dataset": DATASET_GROUP}[what]
    try:
        return getattr(_load(group, kind), hook)(*args)
    except ExtensionError:
        raise
    except Exception as exc:
        raise ExtensionError(f"{what} {kind!r}: its {hook}() raised {type(exc).__name__}: "
                             f"{exc}") from None
