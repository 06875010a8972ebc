"""Finding the user's own algorithms: installed extensions and ``module:Class`` references.

A scenario's ``algorithm.kind`` that is not one of netfl's names is looked up two ways:

* an installed package's entry point in the group ``netfl.algorithms`` (its name is the kind)::

      [project.entry-points."netfl.algorithms"]
      hier-prox = "mypkg.algos:HierProx"

* a reference ``package.module:Class`` written in the scenario itself (no installation needed
  beyond the module being importable).

Either names a subclass of :class:`netfl.algorithms.base.Algorithm` whose ``Spec`` attribute is
its parameter model, a subclass of :class:`netfl.scenario.algorithm_base.AlgorithmSpec` whose
``kind`` field is a plain ``str``. docs/extending.md is the tutorial.

This module imports neither torch nor the algorithms: the scenario schema uses it to validate.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import typing

from netfl.errors import NetflError

ALGORITHM_GROUP = "netfl.algorithms"


class ExtensionError(NetflError):
    """An extension named by a scenario could not be found, imported or used; the message names
    the package or module and what failed."""


def is_reference(kind: str) -> bool:
    """Whether ``kind`` is a ``module:attribute`` reference rather than a registered name."""
    return ":" in kind


def installed(group: str = ALGORITHM_GROUP) -> dict[str, importlib.metadata.EntryPoint]:
    """The entry points of ``group`` that installed packages declare, by name (not loaded)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


@functools.cache
def load_algorithm(kind: str) -> type:
    """The algorithm class ``kind`` names (an entry point or a ``module:Class`` reference).

    Raises ExtensionError naming what failed: no such entry point or module, an import error
    inside it, or an object that is not an Algorithm subclass with a proper ``Spec``."""
    from netfl.algorithms.base import Algorithm  # here: the schema imports this module
    from netfl.scenario.algorithm_base import AlgorithmSpec

    if is_reference(kind):
        module_name, _, attribute = kind.partition(":")
        where = f"module {module_name!r}"
        try:
            obj = importlib.import_module(module_name)
            for part in attribute.split("."):
                obj = getattr(obj, part)
        except ModuleNotFoundError as exc:
            raise ExtensionError(f"algorithm {kind!r}: cannot import {where}: {exc} (is it "
                                 f"installed, or its folder on PYTHONPATH?)") from None
        except AttributeError:
            raise ExtensionError(f"algorithm {kind!r}: {where} has no attribute "
                                 f"{attribute!r}") from None
        except Exception as exc:  # an error inside the user's module
            raise ExtensionError(f"algorithm {kind!r}: importing {where} failed: "
                                 f"{type(exc).__name__}: {exc}") from None
    else:
        entry = installed().get(kind)
        if entry is None:
            raise ExtensionError(f"no algorithm {kind!r}")
        where = f"package {entry.dist.name if entry.dist else '?'} (entry point {entry.value})"
        try:
            obj = entry.load()
        except Exception as exc:
            raise ExtensionError(f"algorithm {kind!r} of {where} failed to load: "
                                 f"{type(exc).__name__}: {exc}") from None
    if not (isinstance(obj, type) and issubclass(obj, Algorithm)):
        raise ExtensionError(f"algorithm {kind!r} ({where}) is {obj!r}, not a subclass of "
                             f"netfl.algorithms.base.Algorithm")
    spec = getattr(obj, "Spec", None)
    if not (isinstance(spec, type) and issubclass(spec, AlgorithmSpec)):
        raise ExtensionError(f"algorithm {kind!r} ({where}) needs a Spec attribute: a subclass "
                             f"of netfl.scenario.algorithm_base.AlgorithmSpec with its "
                             f"parameters")
    annotation = spec.model_fields["kind"].annotation if "kind" in spec.model_fields else None
    if annotation is not str:
        raise ExtensionError(f"algorithm {kind!r} ({where}): its Spec must declare "
                             f"'kind: str' (got {typing.get_origin(annotation) or annotation}); "
                             f"netfl checks the kind against the name it was found by")
    return obj
