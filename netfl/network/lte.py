"""One LTE cell (or a C-V2X cell scheduled by its base station) shared by a road-side unit and
its vehicles: resource blocks divided among the active vehicles (docs/models/iov.md).

Units: bit/s, dB, dBm, metres. Each direction of a vehicle's link is a channel whose capacity
the cell sets whenever a flow starts or ends on one of the cell's channels in that direction:

* every 1 ms TTI the scheduler gives each of the k backlogged vehicles of a direction the same
  whole number of resource blocks, M = floor(N / k) of the N the carrier has, at least
  ``min_grant_rbs``; past N / min_grant_rbs vehicles, they take turns. The remainder idles
  (as ns-3's round-robin and proportional-fair schedulers do). Without fast fading a vehicle's
  channel is steady between rate updates, so proportional fair's metric gives the same equal
  shares as round robin: netfl's ``scheduler`` names them both for what they are and computes
  the same shares;
* a vehicle's rate with M blocks: the transport block of its MCS on M blocks every TTI,
  TBS(ITBS, 50 RB) * M / 50 (TS 36.213 Table 7.1.7.2.1-1, its 50-RB column scaled: within 3%
  of the table at 1-110 RB), times its share of the TTIs;
* its MCS from its SINR per block: spectral efficiency log2(1 + SINR / Gamma), Gamma =
  -ln(5 BER) / 1.5 at BER 5e-5 (Piro et al., "LTE-Sim", IEEE TVT 60(2), 2011; ns-3's
  ``PiroEW2010`` AMC), the highest CQI of TS 36.213 Table 7.2.3-1 at or below it, and
  MCS = 2 (CQI - 1), ITBS from the MCS by TS 36.213 Tables 7.1.7.1-1 (down) and 8.6.1-1 (up);
* the SINR per block: uplink, a vehicle sends min(P_max - 10 log10 M, P0 + alpha PL) per block
  (TS 36.213 5.1.1.1 open-loop power control; ``p0`` None: full power), so a vehicle at the
  cell's edge gains per-block SNR when it shares; downlink, the RSU spreads its power over all
  N blocks. PL is the coupling loss: path loss and shadowing less the antenna gains.

Left out: fast fading and frequency-selective scheduling, HARQ retransmissions (the Piro
threshold keeps the block error rate low), the L2 headers (about 0.4% of a 1500-byte packet),
the control region and interference from other cells.
"""

from __future__ import annotations

import math

from netfl.network.cell import udp_packets_bits
from netfl.network.flow import Channel, Medium
from netfl.network.propagation import THERMAL_NOISE_DBM_PER_HZ

TTI_S = 1e-3
RB_BANDWIDTH_HZ = 180e3
RESOURCE_BLOCKS = {1.4e6: 6, 3e6: 15, 5e6: 25, 10e6: 50, 15e6: 75, 20e6: 100}  # per carrier

CQI_EFFICIENCY = (0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141, 2.4063,
                  2.7305, 3.3223, 3.9023, 4.5234, 5.1152, 5.5547)  # CQI 1..15, bit/s/Hz
TBS_50_RB = (1384, 1800, 2216, 2856, 3624, 4392, 5160, 6200, 6968, 7992, 8760, 9912, 11448,
             12960, 14112, 15264, 16416, 18336, 19848, 21384, 22920, 25456, 27376, 28336,
             30576, 31704, 36696)  # bits per TTI on 50 RB, by ITBS 0..26
PIRO_BER = 5e-5


def efficiency_at(sinr_db: float, ber: float = PIRO_BER) -> float:
    """Piro's spectral efficiency (bit/s/Hz) at ``sinr_db`` for a target bit error rate."""
    gamma = -math.log(5.0 * ber) / 1.5
    return math.log2(1.0 + 10.0 ** (sinr_db / 10.0) / gamma)


def cqi_at(sinr_db: float) -> int:
    """The highest CQI (1..15) whose efficiency the SINR supports; 0 below CQI 1 (no
    transmission)."""
    efficiency = efficiency_at(sinr_db)
    cqi = 0
    while cqi < len(CQI_EFFICIENCY) and CQI_EFFICIENCY[cqi] <= efficiency:
        cqi += 1
    return cqi


def itbs_of(mcs: int, uplink: bool) -> int:
    """The transport block size index of an MCS (0..28), TS 36.213 Tables 8.6.1-1 (uplink)
    and 7.1.7.1-1 (downlink)."""
    if uplink:
        return mcs if mcs <= 10 else mcs - 1 if mcs <= 20 else mcs - 2
    return mcs if mcs <= 9 else mcs - 1 if mcs <= 16 else mcs - 2


def block_rate_bps(sinr_db: float, uplink: bool) -> float:
    """What one resource block carries every TTI at ``sinr_db`` (bit/s); 0 out of range."""
    cqi = cqi_at(sinr_db)
    if cqi == 0:
        return 0.0
    return TBS_50_RB[itbs_of(2 * (cqi - 1), uplink)] / 50.0 / TTI_S


def noise_per_block_dbm(noise_figure_db: float) -> float:
    return THERMAL_NOISE_DBM_PER_HZ + 10.0 * math.log10(RB_BANDWIDTH_HZ) + noise_figure_db


def grant(blocks: int, active: int, min_grant: int) -> tuple[int, float]:
    """(RBs per grant, share of TTIs) of each of ``active`` backlogged vehicles on a carrier
    of ``blocks`` RBs (see the module docstring)."""
    per_tti = max(blocks // max(active, 1), min(min_grant, blocks))
    at_once = blocks // per_tti
    return per_tti, min(1.0, at_once / max(active, 1))


class _Member:
    """One direction of a vehicle's link: its channel and what sets its rate."""

    __slots__ = ("channel", "coupling_db", "fixed_bps")

    def __init__(self, channel: Channel, coupling_db: float, fixed_bps: float | None):
        self.channel, self.coupling_db, self.fixed_bps = channel, coupling_db, fixed_bps


class _Direction:
    """The vehicles of one direction of the cell and the active ones (in joining order)."""

    def __init__(self, uplink: bool):
        self.uplink = uplink
        self.members: dict[Channel, _Member] = {}
        self.active: dict[Channel, None] = {}
        self.medium: Medium | None = None


class LteCell:
    """The carrier of one RSU, uplink and downlink (see the module docstring). ``fixed`` rates
    (a fixed radio) are what a vehicle gets alone on all N blocks; otherwise its rate follows
    its coupling loss. Each direction's :class:`~netfl.network.flow.Medium` ('cell <rsu> up',
    'cell <rsu> down') counts its channels' flows, capacity and bits together."""

    def __init__(self, fabric, name: str, *, blocks: int, vehicle_power_dbm: float,
                 rsu_power_dbm: float, rsu_noise_figure_db: float,
                 vehicle_noise_figure_db: float, p0_dbm: float | None = -80.0,
                 alpha: float = 1.0, min_grant_rbs: int = 3, goodput: float = 1.0):
        self._fabric, self.name, self.blocks = fabric, name, blocks
        self.vehicle_power_dbm, self.rsu_power_dbm = vehicle_power_dbm, rsu_power_dbm
        self._up_noise = noise_per_block_dbm(rsu_noise_figure_db)
        self._down_noise = noise_per_block_dbm(vehicle_noise_figure_db)
        self.p0_dbm, self.alpha, self.min_grant = p0_dbm, alpha, min_grant_rbs
        self.goodput = goodput  # the share of packets not lost (rate-reduction loss)
        self._up, self._down = _Direction(True), _Direction(False)
        # the carrier's statistics per direction ('cell <rsu> up'; links.csv's medium rows)
        self._up.medium = Medium(fabric, f"cell {name} up")
        self._down.medium = Medium(fabric, f"cell {name} down")
        self._direction_of: dict[Channel, _Direction] = {}
        self._multicasts: dict[float, Channel] = {}

    # ------------------------------------------------------------------ rates (pure)

    def uplink_sinr_db(self, coupling_db: float, rbs: int) -> float:
        """A vehicle's SINR per block with ``rbs`` blocks (open-loop power control)."""
        power = self.vehicle_power_dbm - 10.0 * math.log10(rbs)
        if self.p0_dbm is not None:
            power = min(power, self.p0_dbm + self.alpha * coupling_db)
        return power - coupling_db - self._up_noise

    def downlink_sinr_db(self, coupling_db: float) -> float:
        return (self.rsu_power_dbm - 10.0 * math.log10(self.blocks) - coupling_db
                - self._down_noise)

    def rate_bps(self, member: _Member, uplink: bool, active: int) -> float:
        """A member's rate while ``active`` vehicles (itself among them) share its direction."""
        rbs, share = grant(self.blocks, active, self.min_grant)
        if member.fixed_bps is not None:
            return member.fixed_bps * rbs / self.blocks * share * self.goodput
        # the MCS follows the SINR measured on the whole carrier (sounding reference signals)
        sinr = (self.uplink_sinr_db(member.coupling_db, self.blocks) if uplink
                else self.downlink_sinr_db(member.coupling_db))
        return block_rate_bps(sinr, uplink) * rbs * share * self.goodput

    # ------------------------------------------------------------------ the cell

    def link(self, client: str, rsu: str, up_coupling_db: float, down_coupling_db: float,
             fixed_bps: tuple[float, float] | None = None) -> tuple[Channel, Channel]:
        """The (uplink, downlink) channels of a new vehicle link in the cell."""
        up = self._member(self._up, f"{client}->{rsu}", up_coupling_db,
                          None if fixed_bps is None else fixed_bps[0])
        down = self._member(self._down, f"{rsu}->{client}", down_coupling_db,
                            None if fixed_bps is None else fixed_bps[1])
        return up, down

    def frames_bits(self, payload_bytes: float) -> float:
        """What a multicast of ``payload_bytes`` counts on the carrier: whole 1500-byte
        UDP/IP packets."""
        return udp_packets_bits(payload_bytes)

    def broadcast(self, rate_bps: float) -> tuple[Channel]:
        """The channel of a multicast from the RSU at ``rate_bps`` on all N blocks alone (one
        transmission at a fixed MCS, scheduled like one more vehicle)."""
        channel = self._multicasts.get(rate_bps)
        if channel is None:
            channel = self._multicasts[rate_bps] = self._member(
                self._down, f"{self.name} multicast", 0.0, rate_bps)
        return (channel,)

    def _member(self, direction: _Direction, name: str, coupling_db: float,
                fixed_bps: float | None) -> Channel:
        channel = Channel(self._fabric, name, 0.0)
        channel.medium = direction.medium
        member = _Member(channel, coupling_db, fixed_bps)
        direction.members[channel] = member
        self._direction_of[channel] = direction
        channel.watcher = lambda: self._changed(channel)
        self._set(direction, member, 1)
        return channel

    def alone_bps(self, channel: Channel) -> float:
        """A direction's rate when it has the carrier to itself."""
        direction = self._direction_of[channel]
        return self.rate_bps(direction.members[channel], direction.uplink, 1)

    def set_coupling(self, up: Channel, up_db: float, down: Channel, down_db: float) -> None:
        """A vehicle's coupling losses changed (it moved)."""
        for channel, loss in ((up, up_db), (down, down_db)):
            direction = self._direction_of[channel]
            member = direction.members[channel]
            if member.coupling_db != loss:
                member.coupling_db = loss
                self._set(direction, member, max(len(direction.active), 1)
                          if channel in direction.active else 1)

    def _changed(self, channel: Channel) -> None:
        """A flow joined or left ``channel``: re-share its direction among its active
        members only (members accumulate over a run; the active ones are few)."""
        direction = self._direction_of[channel]
        before = len(direction.active)
        if channel.classes:
            direction.active[channel] = None
        else:
            direction.active.pop(channel, None)
        active = len(direction.active)
        if active != before:
            for other in direction.active:
                self._set(direction, direction.members[other], active)
        if channel not in direction.active:
            self._set(direction, direction.members[channel], 1)

    def _set(self, direction: _Direction, member: _Member, active: int) -> None:
        rate = self.rate_bps(member, direction.uplink, active)
        if rate != member.channel.capacity_bps:
            member.channel.set_capacity(rate)
