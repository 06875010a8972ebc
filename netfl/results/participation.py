"""Who took part in each round, per server: clients selected, those that trained, updates
delivered, and those lost, by cause.

Read from the trace as the run goes, per round (a ``RoundEnd`` record closes one):

    selected       clients a server started an exchange with (``Selected`` records)
    trained        local computations that ended (dropped out, cancelled or not)
    delivered      client uploads that arrived at a server
    lost_download  downloads to clients that failed for good (a missed broadcast included)
    lost_upload    client uploads that failed for good
    dropped        computations void because the client dropped out meanwhile
    cancelled      client transfers and computations the algorithm cancelled (first K, deadline)

``lost_by_cause`` in summary.json counts the failures by direction and reason
("upload left-coverage", "download broadcast-missed", ...). Rounds whose algorithm exchanges
nothing with clients (a hand-over only) have no rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from netfl.sim.trace import (
    ExchangeBooked,
    RoundEnd,
    Selected,
    TraceBus,
    TrainEnd,
    TransferEnd,
    TransferFail,
)

COUNTS = ("selected", "trained", "delivered", "lost_download", "lost_upload", "dropped",
          "cancelled")
PARTICIPATION_COLUMNS = ["round", "server", *COUNTS]


class Participation:
    """Subscribes to a run's trace; ``rows`` per round and server, ``lost_by_cause`` overall."""

    def __init__(self, trace: TraceBus, tier_of: Callable[[str], str]):
        self._tier = tier_of
        self.rows: list[dict] = []
        self.lost_by_cause: Counter[str] = Counter()
        self._round: dict[str, Counter] = {}
        self._server_of: dict[str, str] = {}  # client -> the server it last heard from
        trace.subscribe(self._on_selected, Selected)
        trace.subscribe(self._on_train, TrainEnd)
        trace.subscribe(self._on_transfer, TransferEnd)
        trace.subscribe(self._on_exchange_booked, ExchangeBooked)
        trace.subscribe(self._on_fail, TransferFail)
        trace.subscribe(self._on_round, RoundEnd)

    def _count(self, server: str, what: str) -> None:
        self._round.setdefault(server, Counter())[what] += 1

    def _on_selected(self, r: Selected) -> None:
        self._round.setdefault(r.server, Counter())["selected"] += r.count

    def _on_train(self, r: TrainEnd) -> None:
        if self._tier(r.node) != "client":
            return
        server = self._server_of.get(r.node, "")
        self._count(server, "trained")
        if r.cancelled:
            self._count(server, "cancelled")
        elif not r.ok:
            self._count(server, "dropped")

    def _on_transfer(self, r: TransferEnd) -> None:
        tier = self._tier
        if tier(r.dst) == "client":
            self._server_of[r.dst] = r.src
        elif tier(r.src) == "client":
            counts = self._round.get(r.dst)
            if counts is None:
                counts = self._round[r.dst] = Counter()
            counts["delivered"] += 1

    def _on_exchange_booked(self, r: ExchangeBooked) -> None:
        """An exchange in closed form: every client downloaded, trained and delivered."""
        server_of, server = self._server_of, r.server
        for client in r.clients:
            server_of[client] = server
        counts = self._round.setdefault(server, Counter())
        counts["trained"] += len(r.clients)
        counts["delivered"] += len(r.clients)

    def _on_fail(self, r: TransferFail) -> None:
        if r.will_retry:
            return
        down = self._tier(r.dst) == "client"
        if not down and self._tier(r.src) != "client":
            return
        server = r.src if down else r.dst
        if r.reason == "cancelled":
            self._count(server, "cancelled")
            return
        direction = "download" if down else "upload"
        self._count(server, f"lost_{direction}")
        self.lost_by_cause[f"{direction} {r.reason}"] += 1

    def _on_round(self, r: RoundEnd) -> None:
        for server in sorted(self._round):
            counts = self._round[server]
            self.rows.append({"round": r.round, "server": server}
                             | {what: counts[what] for what in COUNTS})
        self._round = {}

    def summary(self) -> dict:
        """Totals over the run, and the failures by cause."""
        totals = {what: sum(row[what] for row in self.rows) for what in COUNTS}
        return totals | {"lost_by_cause": dict(sorted(self.lost_by_cause.items()))}
