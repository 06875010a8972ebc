"""Typed trace records and the bus that carries them (ns-3 style trace sources).

Stages emit records; recorders subscribe to the kinds they care about. Emitting a kind nobody
subscribed to costs one dictionary lookup, so models may trace freely. Every record carries the
simulated time ``time_s`` at which it happened. Records are immutable.

A field name means one thing in every record type (and so one column of ``events.parquet``):

* ``nbytes``: the payload, the bytes the sender handed over to deliver (compressed where the
  algorithm compresses; ``raw_nbytes`` is its size before that);
* ``wire_bytes``: bytes on the wire, TCP headers, re-sends and the air's overhead included, of
  what the record covers: every hop of a delivered transfer (``transfer_end``), what a failed or
  cancelled attempt sent before it stopped (``transfer_fail``), one hop (``hop_end``, which has
  no payload column).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, fields


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """Base of every trace record: ``kind`` names the record type in event tables."""

    kind = "record"
    in_event_table = True  # a column set of events.parquet (False: a bulk record's)
    time_s: float

    def as_row(self) -> dict:
        """A flat dict for an event table (tuples become '>'-joined strings)."""
        row = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            row[f.name] = ">".join(map(str, value)) if isinstance(value, tuple) else value
        return row


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferStart(Record):
    kind = "transfer_start"
    transfer_id: int
    src: str
    dst: str
    tag: str
    nbytes: float
    attempt: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferEnd(Record):
    """A transfer delivered: ``path`` is the node sequence, ``wire_bytes`` counts every bit sent
    on every hop, retransmissions included; ``raw_nbytes`` is the payload's size before
    compression (equal to ``nbytes`` for uncompressed payloads)."""

    kind = "transfer_end"
    transfer_id: int
    src: str
    dst: str
    tag: str
    nbytes: float
    path: tuple[str, ...]
    duration_s: float
    wire_bytes: float
    retransmissions: int
    raw_nbytes: float = -1.0

    @property
    def hops(self) -> int:
        return len(self.path) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferFail(Record):
    """An attempt failed (``reason``: link-down, no-route, loss); ``will_retry`` says whether a
    back-off and a new attempt follow. ``duration_s``: simulated seconds from the transfer's
    start (its first attempt) to this failure."""

    kind = "transfer_fail"
    transfer_id: int
    src: str
    dst: str
    tag: str
    nbytes: float
    reason: str
    link: str
    wire_bytes: float
    will_retry: bool
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class HopEnd(Record):
    """One hop of a transfer attempt's data: it crossed ``link`` from ``u`` to ``v`` between
    ``start_s`` (its first bit entered the link) and ``time_s`` (its last bit left it), as
    ``wire_bytes`` on the wire (headers included), at ``rate_share`` of the hop's capacity on
    average. Emitted only when someone listens (the event table, the timeline)."""

    kind = "hop_end"
    transfer_id: int
    tag: str
    u: str
    v: str
    link: str
    start_s: float
    wire_bytes: float
    rate_share: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainStart(Record):
    kind = "train_start"
    node: str
    round: int
    steps: int
    samples: int
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainEnd(Record):
    """Local training ended; ``ok`` is False where the node dropped out meanwhile, or where
    the algorithm cancelled it (``cancelled``: ``duration_s`` is then the time it ran)."""

    kind = "train_end"
    node: str
    round: int
    duration_s: float
    ok: bool
    cancelled: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Aggregate(Record):
    """A node aggregated ``n_updates`` updates (``level``: edge or cloud)."""

    kind = "aggregate"
    node: str
    round: int
    level: str
    n_updates: int
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelMixed(Record):
    """An update from ``source`` went into ``node``'s model (asynchronous aggregation):
    it started from version ``base_version``; ``version`` is the model's version after it (the
    aggregator's version at arrival was ``version - 1`` for a mix, or the version the buffer
    was applied at); ``staleness`` is that arrival version minus ``base_version``; ``weight``
    its share in the new model (a mix's rate, or its weight in a buffered average)."""

    kind = "model_mixed"
    node: str
    source: str
    base_version: int
    version: int
    staleness: int
    weight: float
    arrived_s: float = -1.0  # when it arrived at ``node`` (-1: not through a mailbox)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost(Record):
    """Learning cost charged to ``node`` (Group-FEL's eq. 5), in seconds of its time: ``kind``
    is "training" (E H_i(n_i)) or "group_operation" (O_g(|g|))."""

    node: str
    round: int
    kind: str
    cost_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class HandOver(Record):
    """The model moved from ``src`` to ``dst`` (sequential and mobile algorithms)."""

    kind = "hand_over"
    src: str
    dst: str
    round: int
    ok: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Dropout(Record):
    """A node became unavailable (``up`` False) or came back (``up`` True)."""

    kind = "dropout"
    node: str
    up: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Association(Record):
    """On a mobile world, ``client`` became (``attached``) or stopped being a client of ``cell``
    (an RSU or a satellite): a user's cell hand-over is one of each."""

    kind = "association"
    client: str
    cell: str
    attached: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Serving(Record):
    """On a LEO world, the satellite that serves ``client`` (among those in view) is now
    ``cell``, as picked when the run first asked after a change (``world.association``)."""

    kind = "serving"
    client: str
    cell: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkState(Record):
    kind = "link_state"
    link: str
    up: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Busy(Record):
    """A node's device was occupied for ``duration_s`` by work other than local training
    (``what``: Group-FEL's ``group_operation`` overhead, a local solver's extra work, ...)."""

    kind = "busy"
    node: str
    duration_s: float
    what: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Selected(Record):
    """``server`` started an exchange with ``count`` of its clients in round ``round``."""

    kind = "selected"
    server: str
    round: int
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundEnd(Record):
    """The algorithm booked round ``round`` as done (``end_round``): a global aggregation, a
    Fed-CHS visit, a CHFL cycle, a Group-FEL round."""

    kind = "round_end"
    round: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Evaluation(Record):
    """The global model was evaluated on the test set after ``round`` rounds."""

    kind = "evaluation"
    round: int
    accuracy: float
    loss: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetReached(Record):
    """The deployable model first reached the target accuracy on the full test set, after
    ``round`` rounds and ``local_steps`` local SGD steps summed over all clients. Emitted right
    after the Evaluation record of that update, at most once per run."""

    kind = "target_reached"
    round: int
    accuracy: float
    local_steps: int


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ExchangeBooked(Record):
    """An exchange advanced in closed form (``links.closed_form``; netfl.algorithms.cohort) in
    one record: what its clients' TransferEnd and TrainEnd records would have said, as
    columns. Client ``clients[i]`` downloaded from ``server`` over the link ``links[i]``
    (``down_tag``) from ``start_s`` to ``down_end_s[i]``, trained until ``trained_s[i]`` and
    uploaded (``up_tag``) until ``up_end_s[i]`` (float arrays, seconds); each download carried
    ``down_nbytes`` (``down_wire_bytes`` on the wire), each upload ``up_nbytes`` (``up_raw_nbytes``
    before compression, ``up_wire_bytes`` on the wire). ``time_s``: the last upload's arrival.
    Emitted instead of the per-client records only where every subscriber to those takes this
    one too (``TraceBus.takes_in_bulk``): never into an event table."""

    kind = "exchange_booked"
    in_event_table = False
    server: str
    round: int
    clients: tuple[str, ...]
    links: tuple[str, ...]
    down_tag: str
    up_tag: str
    down_nbytes: float
    up_nbytes: float
    up_raw_nbytes: float
    down_wire_bytes: float
    up_wire_bytes: float
    start_s: float
    down_end_s: object  # numpy arrays: this layer imports no numpy
    trained_s: object
    up_end_s: object


Subscriber = Callable[[Record], None]


@dataclass
class TraceBus:
    """Routes records to subscribers by record type (exact type; ``None`` means every record)."""

    _subscribers: dict[type | None, list[Subscriber]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def subscribe(self, callback: Subscriber, *kinds: type[Record]) -> None:
        """Call ``callback(record)`` for records of the given types, or of every type if none."""
        for kind in kinds or (None,):
            self._subscribers[kind].append(callback)

    def wants(self, kind: type[Record]) -> bool:
        """Whether anyone listens to ``kind`` (lets hot paths skip building a record)."""
        return bool(self._subscribers.get(kind) or self._subscribers.get(None))

    def takes_in_bulk(self, bulk: type[Record], *kinds: type[Record]) -> bool:
        """Whether ``bulk`` records may stand for records of ``kinds``: nobody listens to every
        record, and each subscriber to ``kinds`` (a bound method) belongs to an object that
        subscribed to ``bulk`` too."""
        if self._subscribers.get(None):
            return False
        takers = {id(getattr(cb, "__self__", cb)) for cb in self._subscribers.get(bulk, ())}
        return all(id(getattr(cb, "__self__", cb)) in takers
                   for kind in kinds for cb in self._subscribers.get(kind, ()))

    def emit(self, record: Record) -> None:
        for callback in self._subscribers.get(type(record), ()):
            callback(record)
        for callback in self._subscribers.get(None, ()):
            callback(record)
