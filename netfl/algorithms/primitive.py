"""Primitives that take simulated time are generators; this makes one that is never run an
error. ``@primitive`` wraps each such method's generator with a token that lives as long as it
does: where the generator dies before it started (``self.send(...)`` without ``yield from``),
the token notes its name in the algorithm's ``_forgotten`` list, and the algorithm raises a
clear error at its next primitive or at the end of the run.
"""

from __future__ import annotations

import functools
from collections.abc import Generator


class _Started:
    """Lives as long as a primitive's generator; reports it where it dies never started."""

    __slots__ = ("started", "name", "forgotten")

    def __init__(self, name: str, forgotten: list):
        self.started, self.name, self.forgotten = False, name, forgotten

    def __del__(self):
        # an interrupt (SIGINT, SIGTERM) can land inside __init__ before any slot is set: such
        # a token never tracked a generator, so it has nothing to report
        try:
            started, forgotten, name = self.started, self.forgotten, self.name
        except AttributeError:
            return
        if not started:
            forgotten.append(name)


def _tracked(token: _Started, generator: Generator) -> Generator:
    token.started = True
    return (yield from generator)


class RunOver(Exception):
    """A background loop cancelled at the stop called a primitive: it ends there (its process
    was cancelled, and its failure defused: AsyncPrimitives.stop_background). Other processes
    still running at the stop are left as they were."""


def primitive(method):
    """A primitive that takes simulated time: its generator, tracked so that one never run
    is reported (``_Started``)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if self._forgotten:
            self._report_forgotten()
        if getattr(self, "_over", False) and self.env.active_process in self._stopped:
            raise RunOver(f"{method.__name__} called after the run ended")
        return _tracked(_Started(method.__name__, self._forgotten),
                        method(self, *args, **kwargs))

    return call


def defuse(event) -> None:
    """A failed event that nobody waits for is not an error of the run (a cancelled process)."""
    if not event.ok:
        event.defused = True
