"""Plug-ins: the user's own algorithms, models, partitions and data sets (docs/extending.md).

The registry that finds them and checks their Specs is netfl.scenario.plugins (the schema
validates with it); this module is its public face, plus :func:`call_extension`, with which
netfl's builders (netfl.learn) call a model's ``build``, a partition's ``split`` or a data
set's ``load``, checking there that the class has it. An algorithm plug-in's class is checked
where it is built (netfl.algorithms.registry).

This module imports neither torch nor the algorithms.
"""

from __future__ import annotations

from netfl.scenario.plugins import (
    ALGORITHM_GROUP,
    DATASET_GROUP,
    MODEL_GROUP,
    PARTITION_GROUP,
    ExtensionError,
    clear_cache,
    expected,
    import_reference,
    installed,
    is_reference,
    load_for_group,
    located,
)

_GROUP_OF = {"model": MODEL_GROUP, "partition": PARTITION_GROUP, "dataset": DATASET_GROUP}


def call_extension(what: str, kind: str, hook: str, *args):
    """Call ``hook`` (build, split, load) of the ``what`` (model, partition, dataset) plug-in
    ``kind``. Raises ExtensionError where the class has no such hook, and turns an exception
    inside the hook into an ExtensionError naming the plug-in and the hook (never a
    traceback)."""
    group = _GROUP_OF[what]
    found, where = located(group, kind)
    method = getattr(found, hook, None)
    if not callable(method):
        raise ExtensionError(f"{what} {kind!r} ({where}) is {found!r}, not {expected(group)}")
    try:
        return method(*args)
    except ExtensionError:
        raise
    except Exception as exc:
        raise ExtensionError(f"{what} {kind!r}: its {hook}() raised {type(exc).__name__}: "
                             f"{exc}") from None


__all__ = [
    "ALGORITHM_GROUP", "DATASET_GROUP", "MODEL_GROUP", "PARTITION_GROUP", "ExtensionError",
    "call_extension", "clear_cache", "expected", "import_reference", "installed", "is_reference",
    "load_for_group", "located",
]
