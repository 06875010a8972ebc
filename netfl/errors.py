"""The errors netfl raises on purpose.

Every error a user can cause or meet derives from :class:`NetflError`, so the CLI can print it
cleanly (no traceback) and scripts can catch one base class::

    NetflError
    ├── ScenarioError        a scenario file or override is invalid (lists every problem)
    ├── DatasetNotFound      a data set is in none of the places searched
    ├── CorruptDataFile      a data set file is there but unreadable (names the file)
    ├── TransferFailed       a network transfer could not be delivered (link down, no route, loss)
    └── SimulationError      the simulation reached a state it cannot continue from
"""

from __future__ import annotations

from dataclasses import dataclass


class NetflError(Exception):
    """Base class of every error netfl raises on purpose."""


@dataclass(frozen=True)
class ScenarioProblem:
    """One problem in a scenario: where (file, dotted field path, line), the bad value, and why."""

    path: str
    message: str
    value: object = None
    has_value: bool = True
    source: str | None = None
    line: int | None = None

    def format(self) -> str:
        where = self.source or "<scenario>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        field = self.path or "<top level>"
        shown = f" = {self.value!r}" if self.has_value else ""
        return f"{where}: {field}{shown}: {self.message}"


class ScenarioError(NetflError):
    """A scenario is invalid. Holds every problem found, not only the first."""

    def __init__(self, problems: list[ScenarioProblem]):
        # args hold the constructor's arguments: SimPy re-creates exceptions as type(e)(*e.args).
        super().__init__(list(problems))
        self.problems = list(problems)

    def __str__(self) -> str:
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in scenario"
        return head + ":\n" + "\n".join("  " + p.format() for p in self.problems)


class DatasetNotFound(NetflError):
    """A data set was not found; the message names every place searched and how to provide it."""


class CorruptDataFile(NetflError, ValueError):
    """A data set file exists but is not what it should be; the message names the file."""


class TransferFailed(NetflError):
    """A transfer was not delivered.

    Attributes:
        src, dst: end points of the transfer.
        reason: "link-down", "no-route", "loss" (retransmission limit reached),
            "left-coverage" (a vehicle left its RSU's coverage), or "resumed-part <reason>"
            (the part of a resumed upload that the old RSU received was not forwarded).
        link: the link (u, v) that failed it, where one did.
    """

    def __init__(self, src: str, dst: str, reason: str, link: tuple[str, str] | None = None):
        super().__init__(src, dst, reason, link)
        self.src, self.dst, self.reason, self.link = src, dst, reason, link

    def __str__(self) -> str:
        on = f" on link {self.link[0]}-{self.link[1]}" if self.link else ""
        return f"transfer {self.src} -> {self.dst} failed: {self.reason}{on}"


class SimulationError(NetflError):
    """The simulation cannot continue (for example, no client is reachable at all)."""
