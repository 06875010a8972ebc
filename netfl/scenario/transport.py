"""The ``links.transport`` section: how a transfer crosses its path (docs/models/network.md).

* ``tcp`` (the default): pipelined over the whole path at its max-min fair share, after TCP's
  connection set-up and slow start, with per-segment header overhead.
* ``fluid``: pipelined at its max-min fair share from the first bit (the ideal).
* ``store-and-forward``: message custody at each hop (delay-tolerant, bundle networking).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt, PositiveInt

from netfl.scenario.types import PositiveDuration, Section, Size


class TcpTransport(Section):
    """TCP over the whole path: ``handshake`` costs one round trip before the first byte (false:
    a persistent connection, such as a gRPC channel, already open); slow start from
    ``initial_window`` segments of ``mss`` bytes grows the window by the segments acknowledged
    in each round trip (the receiver acknowledges every ``delayed_ack``-th segment: 10, 18, 36,
    72, ... segments per round with the default 2) until the flow is limited by its fair share
    (or by ``receive_window``); every segment carries
    ``header_bytes`` on the wire (TCP with timestamps 32 + IPv4 20 + point-to-point framing 2).
    With ``loss_limited``, each link's ``retransmit`` loss probability is a packet loss rate and
    caps the rate at MSS / RTT * sqrt(3 / (2 p)) ("The Macroscopic Behavior of the TCP
    Congestion Avoidance Algorithm", ACM SIGCOMM Computer Communication Review 1997) instead of
    re-sending whole messages."""

    kind: Literal["tcp"] = "tcp"
    handshake: bool = True
    initial_window: PositiveInt = 10
    delayed_ack: PositiveInt = 2
    mss: Annotated[Size, Field(ge=64)] = 1448
    header_bytes: NonNegativeInt = 54
    receive_window: Size | None = None
    loss_limited: bool = False


class FluidTransport(Section):
    """Pipelined at the max-min fair share from the first bit: no set-up, ramp or headers."""

    kind: Literal["fluid"] = "fluid"


class StoreAndForwardTransport(Section):
    """Each hop receives the whole message before sending it on, at that hop's fair share. A
    relay holds the message while the next hop is down (or its route is gone), for at most
    ``custody_timeout``, and then sends it on; a hop cut mid-message is re-sent from that relay.
    At the source, a down first hop fails the attempt as under the other transports."""

    kind: Literal["store-and-forward"]
    custody_timeout: PositiveDuration = 3600.0


Transport = Annotated[TcpTransport | FluidTransport | StoreAndForwardTransport,
                      Field(discriminator="kind")]
