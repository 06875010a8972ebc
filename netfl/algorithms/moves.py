"""Primitives that move a model: transfers, uploads, downloads (the scenario's broadcast
medium where there is one), hand-overs. Mixed into netfl.algorithms.base.Algorithm, whose
``__init__`` sets what they use."""

from __future__ import annotations

from collections.abc import Generator, Sequence

from netfl.algorithms.primitive import primitive
from netfl.errors import TransferFailed
from netfl.sim.trace import HandOver


class ModelMoves:
    """send, send_up, broadcast, broadcasts_from, download, reachable, carry_model,
    move_model."""

    @primitive
    def send(self, src: str, dst: str, nbytes: float, raw_nbytes: float | None = None,
             tag: str | None = None) -> Generator:
        """Transfer ``nbytes``; returns True if delivered, False if it failed (after retries)
        or was cancelled. ``raw_nbytes`` is the size before compression (for accounting);
        ``tag`` overrides the accounting tag (default: the tiers of the two ends)."""
        try:
            yield from self._network.transfer(src, dst, nbytes, tag=tag, raw_nbytes=raw_nbytes)
        except TransferFailed:
            return False
        return True

    def send_up(self, src: str, dst: str) -> Generator:
        """Send a model or update upwards: compressed by ``compression``, counted both ways."""
        return self.send(src, dst, self.upload_bytes, self.download_bytes)

    @primitive
    def broadcast(self, src: str, receivers: Sequence[str]) -> Generator:
        """Broadcast the model (``download_bytes``) from ``src`` to ``receivers`` at once, on
        the scenario's broadcast medium; returns the set of receivers that got it."""
        results = yield self._network.broadcast(src, list(receivers), self.download_bytes)
        return {r for r, report in results.items() if report is not None}

    def broadcasts_from(self, node: str) -> bool:
        """Whether ``node`` sends its downlinks as one broadcast (an RSU with
        ``world.medium.downlink: broadcast``)."""
        return self._network.broadcasts_from(node)

    @primitive
    def download(self, server: str, clients: Sequence[str]) -> Generator:
        """The model from ``server`` to every client at once: one broadcast where ``server``
        broadcasts, otherwise a transfer to each in parallel. Returns the set that got it."""
        if clients and self.broadcasts_from(server):
            return (yield from self.broadcast(server, clients))
        jobs = [self.env.process(self.send(server, c, self.download_bytes)) for c in clients]
        yield self.env.all_of(jobs)
        return {c for c, job in zip(clients, jobs, strict=True) if job.value}

    def reachable(self, src: str, dst: str) -> bool:
        """Whether a route from ``src`` to ``dst`` exists now (links up, in coverage)."""
        return self._network.route(src, dst) is not None

    @primitive
    def carry_model(self, holder: str | None, node: str, round_: int) -> Generator:
        """Bring the model to ``node`` (no transfer where it is there, or nowhere yet: the
        initial model starts anywhere). Returns the node that holds it afterwards."""
        if holder is None or holder == node:
            return node
        return (yield from self.move_model(holder, [node], round_))

    @primitive
    def move_model(self, holder: str, candidates: Sequence[str], round_: int) -> Generator:
        """Send the model from ``holder`` to the first candidate that receives it: each is tried
        ``spec.handover.attempts`` times (once without that setting), the next ones only with
        ``fallback``. Every attempt is a hand-over record. Returns the node that holds the
        model afterwards (``holder`` when all failed)."""
        handover = getattr(self.spec, "handover", None)
        attempts = 1 if handover is None else handover.attempts
        fallback = handover is not None and handover.fallback
        for candidate in candidates if fallback else candidates[:1]:
            if candidate == holder:
                return holder
            for _ in range(attempts):
                ok = yield from self.send(holder, candidate, self.download_bytes)
                self._trace.emit(HandOver(time_s=self.env.now, src=holder, dst=candidate,
                                          round=round_, ok=ok))
                if ok:
                    return candidate
        return holder

    @primitive
    def wait_for_contact(self, client: str) -> Generator:
        """Wait until ``client`` is attached to some edge server (at once where it is now): a
        vehicle entering an RSU's coverage, a satellite rising over a ground station. Returns
        that edge server (``world.edge_of``). On a static world a client is always attached.
        A client that never comes back waits until the run ends (the stall watchdog,
        ``stop.stall_after``, then stops a run that nothing else moves)."""
        edge = self.world.edge_of(client)
        if edge is not None:
            return edge
        if self._contact_waiters is None:
            self._contact_waiters = {}
            self.world.subscribe(self._on_contact)
        event = self.env.event()
        self._contact_waiters.setdefault(client, []).append(event)
        try:
            yield event
        except BaseException:
            if not event.triggered:
                self._contact_waiters[client].remove(event)
            raise
        return self.world.edge_of(client)

    _contact_waiters: dict | None = None

    def _on_contact(self, client: str, edge: str, attached: bool) -> None:
        if attached:
            for event in self._contact_waiters.pop(client, []):
                event.succeed(edge)

