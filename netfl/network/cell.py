"""One radio medium shared by a road-side unit and its vehicles: IEEE 802.11p's DCF
(docs/models/iov.md).

Every frame in the cell, uplink or downlink, data or TCP acknowledgement, takes the same
half-duplex channel in turn. A flow over a vehicle's link crosses two channels: the cell's
(shared by every flow of the cell) and its own direction's (the most it could get alone). The
cell sets both capacities whenever its set of flows changes:

* a data frame of station i (one direction of one vehicle's link, at PHY rate r_i) costs
  T_i = its exchange (``dcf.exchange_s``) plus ``acks_per_frame`` TCP acknowledgement exchanges
  the other way, and each of the 1 + ``acks_per_frame`` frames waits the contention cost o(n)
  of n stations (``dcf.contention_per_frame_s``);
* DCF gives every backlogged station the same number of frames (so the same throughput: the
  slow stations drag the fast ones down, the 802.11 performance anomaly of Heusse et al. 2003):
  with N flows, each gets b / sum_j (T_j + (1 + a) o(n)) for b counted bits per frame; the
  cell's capacity is N times that, and the max-min fair shares on it are those equal rates;
* a flow held below its share elsewhere leaves its bits to the others (at their own costs
  only approximately: the cell is charged in bits, not airtime);
* n counts the stations with frames to send: each data sender and, under TCP, each receiver
  (its acknowledgements). Under TCP at most 2 contend at once: the RSU's acknowledgements
  clock the uploads, so about one vehicle is backlogged at a time besides the RSU (Bruno,
  Conti and Gregori, IEEE TMC 7(2), 2008; ns-3 agrees: benchmarks/validate_ns3.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netfl.network import dcf
from netfl.network.flow import Channel

UDP_IP_HEADER_BYTES = 28


def udp_packets_bits(payload_bytes: float, ip_bytes: float = 1500.0,
                     bits_per_packet: float = 1500.0 * 8) -> float:
    """What ``payload_bytes`` sent as UDP/IP packets of ``ip_bytes`` (28 bytes of headers
    each) count, at ``bits_per_packet`` a packet."""
    return math.ceil(payload_bytes / (ip_bytes - UDP_IP_HEADER_BYTES)) * bits_per_packet


@dataclass(frozen=True)
class Framing:
    """How a transport's bits map to frames: each data frame carries ``ip_bytes`` of IP packet,
    counted as ``bits_per_frame`` by the flow; ``acks_per_frame`` TCP acknowledgements of
    ``ack_ip_bytes`` go back per data frame (0 without TCP)."""

    ip_bytes: float = 1500.0
    bits_per_frame: float = 1500.0 * 8
    acks_per_frame: float = 0.0
    ack_ip_bytes: float = 52.0


@dataclass(frozen=True)
class DcfParameters:
    """The access category's AIFSN and contention window bounds."""

    aifsn: int = 2
    cw_min: int = 15
    cw_max: int = 1023


class _Station:
    """One direction of a vehicle's link: its own channel, PHY rate and airtime per frame."""

    __slots__ = ("channel", "sender", "receiver", "rate_bps", "goodput", "frame_s", "reverse",
                 "acks")

    def __init__(self, channel: Channel, sender: str, receiver: str, rate_bps: float,
                 goodput: float, acks: float):
        self.channel, self.sender, self.receiver = channel, sender, receiver
        self.rate_bps, self.goodput, self.frame_s = rate_bps, goodput, math.inf
        self.reverse: _Station = self
        self.acks = acks  # TCP acknowledgement frames per data frame (0 for a broadcast)


class Dot11Cell:
    """The medium of one RSU (see the module docstring)."""

    def __init__(self, fabric, name: str, framing: Framing, parameters: DcfParameters):
        self.framing, self.parameters = framing, parameters
        self.channel = Channel(fabric, f"cell {name}", 0.0)
        self.channel.watcher = self.refresh
        self._fabric, self.name = fabric, name
        self._stations: dict[Channel, _Station] = {}
        self._broadcasts: dict[float, _Station] = {}

    def link(self, client: str, rsu: str, up_bps: float, down_bps: float,
             goodput: float = 1.0) -> tuple[tuple[Channel, Channel], tuple[Channel, Channel]]:
        """The channels of a new vehicle link in the cell at PHY rates ``up_bps`` (``client``
        -> ``rsu``) and ``down_bps``: (up's own, the cell's), (down's own, the cell's).
        ``goodput``: the share of frames not lost (lost frames are sent again)."""
        acks = self.framing.acks_per_frame
        up = _Station(Channel(self._fabric, f"{client}->{rsu}", 0.0), client, rsu, up_bps,
                      goodput, acks)
        down = _Station(Channel(self._fabric, f"{rsu}->{client}", 0.0), rsu, client,
                        down_bps, goodput, acks)
        up.reverse, down.reverse = down, up
        for station in (up, down):
            self._stations[station.channel] = station
        self._reprice(up)
        return (up.channel, self.channel), (down.channel, self.channel)

    def broadcast(self, rate_bps: float) -> tuple[Channel, Channel]:
        """The channels of a broadcast from the RSU at ``rate_bps``: no MAC or TCP
        acknowledgements, no retries. Its flow counts ``framing.bits_per_frame`` per frame
        (``frames_bits`` converts a payload)."""
        station = self._broadcasts.get(rate_bps)
        if station is None:
            channel = Channel(self._fabric, f"{self.name} broadcast", 0.0)
            station = _Station(channel, self.name, self.name, rate_bps, 1.0, 0.0)
            ip_bytes = self.framing.ip_bytes
            station.frame_s = (dcf.aifs_s(self.parameters.aifsn) + dcf.frame_airtime_s(
                ip_bytes + dcf.MAC_DATA_OVERHEAD_BYTES, rate_bps))
            self._stations[channel] = self._broadcasts[rate_bps] = station
        return station.channel, self.channel

    def rate_of(self, channel: Channel) -> float:
        """The PHY rate of a direction (by its own channel)."""
        return self._stations[channel].rate_bps

    def frames_bits(self, payload_bytes: float) -> float:
        """What a broadcast of ``payload_bytes`` counts on the cell: whole frames of UDP/IP
        packets (28 bytes of headers each)."""
        return udp_packets_bits(payload_bytes, self.framing.ip_bytes,
                                self.framing.bits_per_frame)

    def set_rates(self, up_channel: Channel, up_bps: float, down_bps: float) -> None:
        """A vehicle's PHY rates changed (it moved): ``up_channel`` is its uplink's own."""
        up = self._stations[up_channel]
        up.rate_bps, up.reverse.rate_bps = up_bps, down_bps
        self._reprice(up)
        self.refresh()

    def _reprice(self, up: _Station) -> None:
        """Airtime per data frame of both directions of a link: the exchange at the sender's
        rate and its acknowledgements at the receiver's, without contention."""
        f, aifsn = self.framing, self.parameters.aifsn
        for station in (up, up.reverse):
            data, back = station.rate_bps, station.reverse.rate_bps
            if data <= 0 or (f.acks_per_frame and back <= 0):
                station.frame_s = math.inf
                continue
            ack = dcf.exchange_s(f.ack_ip_bytes, back, aifsn) if f.acks_per_frame else 0.0
            station.frame_s = (dcf.exchange_s(f.ip_bytes, data, aifsn)
                               + f.acks_per_frame * ack) / station.goodput

    def contenders(self, active: list[_Station]) -> int:
        senders = {s.sender for s in active}
        if self.framing.acks_per_frame:
            senders |= {s.receiver for s in active}
            return min(len(senders), 2)
        return len(senders)

    def refresh(self) -> None:
        """Recompute the capacities from the flows now in the cell (changed ones only). A
        station at rate 0 (below every rate's threshold) gets nothing and takes no airtime
        (it still contends)."""
        p, f = self.parameters, self.framing
        active: dict[_Station, int] = {}
        for cls in self.channel.classes:
            station = next(self._stations[c] for c in cls.channels if c in self._stations)
            active[station] = active.get(station, 0) + cls.count
        sending = {s: count for s, count in active.items() if s.frame_s < math.inf}
        collision = max((s.frame_s for s in sending), default=0.0)
        per_frame = dcf.contention_per_frame_s(  # each frame's, data or acknowledgement
            max(self.contenders(list(active)), 1), collision, p.cw_min, p.cw_max)
        flows = sum(sending.values())
        cost = math.fsum(count * (s.frame_s + (1.0 + s.acks) * per_frame)
                         for s, count in sending.items())
        capacity = flows * f.bits_per_frame / cost if flows else 0.0
        if capacity != self.channel.capacity_bps:
            self.channel.set_capacity(capacity)
        for station in active:
            alone = (f.bits_per_frame / (station.frame_s + (1.0 + station.acks) * per_frame)
                     if station.frame_s < math.inf else 0.0)
            if alone != station.channel.capacity_bps:
                station.channel.set_capacity(alone)
