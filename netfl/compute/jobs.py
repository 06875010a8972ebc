"""A node's job slots: SimPy's ``Resource`` without its bookkeeping objects.

Every client's local work and every server's aggregation queues here, so a paper-scale run makes
millions of these requests (Fed-CHS: 1.6 million); SimPy's Resource spends most of a job's host
time on its generic put and get queues. :class:`JobSlots` keeps the very same events, made in
the same order, so a run is the same to the bit with either:

* a request is an event that succeeds at once where a slot is free and no earlier request waits
  (the process still waits on it: it resumes after the events already due now), else when a
  release lets it in; requests are let in first come, first served, one per release;
* a release frees the slot at once and is itself an event, due now, whose processing lets the
  first waiting request in (SimPy's ``Release`` and its ``_trigger_put``);
* a request abandoned before it was granted leaves the queue (an interrupt), and a process
  closed by the generator's garbage collection releases nothing (``Request.__exit__``).
"""

from __future__ import annotations

import simpy


class JobSlots:
    """``capacity`` jobs at once on one node; the rest wait in arrival order."""

    __slots__ = ("env", "capacity", "users", "waiting")

    def __init__(self, env: simpy.Environment, capacity: int = 1):
        if capacity < 1:
            raise ValueError(f"a node needs at least one job slot, got {capacity}")
        self.env, self.capacity = env, capacity
        self.users = 0  # slots granted and not yet released
        # a list, not a deque: every client has slots and rarely a queue (760 bytes -> 56)
        self.waiting: list[simpy.Event] = []

    def request(self) -> simpy.Event:
        """An event that succeeds when the caller holds a slot."""
        slot = self.env.event()
        self.waiting.append(slot)
        self._let_in()
        return slot

    def _let_in(self, _event: simpy.Event | None = None) -> None:
        """Grant the first waiting request where a slot is free (one per call, as SimPy)."""
        if self.waiting and self.users < self.capacity:
            self.users += 1
            self.waiting.pop(0).succeed()

    def cancel(self, slot: simpy.Event) -> None:
        """Take a request that was never granted out of the queue."""
        if not slot.triggered:
            self.waiting.remove(slot)

    def release(self, slot: simpy.Event) -> None:
        """Give back ``slot`` (nothing to give back where it was never granted); the next
        request is let in when this release's own event is processed."""
        if slot.triggered:
            self.users -= 1
        released = self.env.event()
        released.callbacks.append(self._let_in)
        released.succeed()

    def run(self, duration_s: float):
        """Generator: queue for a slot, then hold it for ``duration_s`` simulated seconds."""
        slot = self.request()
        try:
            yield slot
            yield self.env.timeout(duration_s)
        except GeneratorExit:  # closed, not interrupted: SimPy releases nothing then
            self.cancel(slot)
            raise
        except BaseException:
            self.cancel(slot)
            self.release(slot)
            raise
        self.release(slot)
